"""A named battle side's tokens-over-time chart (arena/battles/fragments.py `chart`): titled
axes with round ticks, the axis ending on a labelled value, so two sides' charts (each on its own
scale) can be read and compared by their numbers."""

import re

from arena.battles import fragments


def test_the_speed_chart_has_titled_axes_with_round_ticks():
    svg = fragments.chart([(0.4, 1), (1.0, 8), (2.3, 27), (3.1, 40)])
    titles = re.findall(r'<text class="axis-title"[^>]*>([^<]+)</text>', svg)
    assert titles == [fragments.CHART_X_TITLE, fragments.CHART_Y_TITLE]
    ticks = re.findall(r'<text class="tick"[^>]*>([^<]+)</text>', svg)
    assert ticks[:3] == ["0", "2", "4"] and ticks[3:] == ["0", "20", "40"]  # seconds across, tokens up
    assert fragments.round_ticks(27) == [0, 10, 20, 30] and fragments.round_ticks(0.9) == [0, 0.5, 1]
