"""The metrics of an answer (time to first token, tokens/s, tokens) have one markup,
templates/generations/_metrics.html, whether the playground, a battle or a shared page shows them."""

import re

from django.template import Context, Template

from arena.battles import fragments as battle_fragments
from arena.battles import presenting
from arena.playground import fragments as playground_fragments
from tests.arena.factories import comparison
from tests.figures import shows_figure

METRICS = re.compile(r'<div(?: id="[a-z-]+")? class="metrics">(.*?)</div>', re.S)


def metrics_of(html: str) -> str:
    """The figures' markup, without the element id the sockets' swaps target."""
    found = METRICS.findall(html)
    assert len(found) == 1, html
    return found[0]


def test_playground_battle_and_history_show_the_same_metrics_markup(owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1])
    gen = battle.left  # finished: 3 tokens at 12.5 tokens/s, first after 0.75 s
    playground = metrics_of(playground_fragments.stored(gen))
    side = battle_fragments.Side("left", gen.created_at.timestamp(), blind=False)
    battle_page = metrics_of(battle_fragments.stored(side, gen))
    history = metrics_of(Template("{% load history_tags %}{% shared_side shown 'left' %}").render(
        Context({"shown": presenting.shown(battle)})))
    assert battle_page.startswith(playground)  # the battle adds its chart after the same figures
    assert history == playground
    assert 'data-metric="ttft">0.75 s<' in playground and 'data-metric="tps">12.5<' in playground
    assert 'data-metric="tokens">3<' in playground


def test_a_blind_side_shows_no_figures_in_either_place(owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1], blind=True)
    side = battle_fragments.Side("left", battle.created_at.timestamp(), blind=True)
    socket = battle_fragments.stored(side, battle.left)
    page = Template("{% load history_tags %}{% shared_side shown 'left' %}").render(
        Context({"shown": presenting.shown(battle)}))
    for html in (socket, page):
        assert "Speeds are shown at the reveal." in html
        assert "data-metric" not in html and not shows_figure(html, "12.5")
