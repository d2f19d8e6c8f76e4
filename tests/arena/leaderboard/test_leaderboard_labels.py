"""The leaderboard names each model by its label (ModelEntry.label) in its charts, the win-rate
matrix and its tables: with verdicts between the eight default variants, no two labels shown are
equal (names cut to ~20 characters made four SmolLM2 variants read "SmolLM2 135M Inst…"), none is
cut, the full names stay on the page, and every chart has titled axes."""

from __future__ import annotations

import pytest
from django.urls import reverse

from arena.catalogue.models import ModelEntry
from arena.leaderboard.charts import RATING_AXIS
from tests.arena.factories import verdict

from .chart_subjects import ALIKE, seed
from .charts_html import axis_titles, cell_labels, section, svg_labels, svgs

pytestmark = pytest.mark.django_db


@pytest.fixture
def round_of_verdicts(owner, catalogue):
    """Each default variant against the next (a ring): every one rated, each with a win and a loss."""
    assert len(catalogue) == 8
    for i, left in enumerate(catalogue):
        verdict(owner, left, catalogue[(i + 1) % len(catalogue)], "left" if i % 3 else "right")
    return catalogue


def page(client, owner) -> str:
    client.force_login(owner)
    return client.get(reverse("leaderboard")).content.decode()


def test_no_two_labels_in_the_charts_matrix_and_table_are_equal(client, owner, round_of_verdicts):
    html = page(client, owner)
    labels = {m.slug: m.label for m in ModelEntry.objects.all()}
    assert len(set(labels.values())) == 8
    rating_svg, *frontier_svgs = svgs(html)
    shown = {
        "ratings chart": svg_labels(rating_svg),
        "ratings table": cell_labels(html, "ratings"),
        "matrix columns": cell_labels(section(html, "win-matrix", "</thead>"), element_class="chart-label"),
        "matrix rows": cell_labels(section(html, "win-matrix", "</table>").split("</thead>")[1]),
    }
    for key in ("speed", "first-token", "memory"):
        shown[f"{key} key"] = cell_labels(section(html, f"frontier-{key}", "</figure>"))
    assert len(frontier_svgs) == 3
    for where, texts in shown.items():
        assert len(texts) == 8, (where, texts)
        assert len(set(texts)) == 8, f"two labels alike in the {where}: {texts}"
        assert not any("…" in text for text in texts), where
    assert sorted(shown["ratings table"]) == sorted(labels.values())
    assert sorted(t.replace("· ", "") for t in shown["ratings chart"]) == sorted(
        v.replace("· ", "") for v in labels.values())  # wrapped lines joined: the whole label
    for entry in round_of_verdicts:
        assert entry.name in html  # the full name stays on the page (table and tooltips)


def test_every_chart_has_titled_axes_and_the_matrix_says_what_a_cell_is(client, owner, round_of_verdicts):
    html = page(client, owner)
    rating_svg, speed_svg, first_token_svg, memory_svg = svgs(html)
    assert axis_titles(rating_svg) == [RATING_AXIS]
    assert axis_titles(speed_svg) == ["Decode speed (tokens/s, median)", "Rating (Elo scale)"]
    assert axis_titles(first_token_svg) == ["Time to first token (s, median)", "Rating (Elo scale)"]
    assert axis_titles(memory_svg) == ["Memory (MB)", "Rating (Elo scale)"]
    assert "dot: rating · bar: 95% confidence interval" in html
    assert "Scale " not in html  # the old bare "Scale 629 to 1433"
    assert "Row beats column (%)" in section(html, "win-matrix", "</thead>")


def test_a_relabelled_entry_shows_its_new_label_in_every_chart(client, owner, round_of_verdicts):
    entry = round_of_verdicts[4]
    entry.label = "Smol on llama.cpp, renamed by the team"
    entry.save()
    html = page(client, owner)
    rating_svg = svgs(html)[0]
    assert "Smol on llama.cpp, renamed by the team" in svg_labels(rating_svg)
    assert html.count("Smol on llama.cpp, renamed by the team") >= 6  # table, matrix x2, three keys


def test_a_suite_run_s_charts_tell_its_alike_contestants_apart(client, owner, catalogue):
    """Four SmolLM2 variants whose names share their first 20 characters, rated by a judge."""
    run_id = seed(owner.username)["run"]
    client.force_login(owner)
    html = client.get(reverse("suite-run-detail", args=[run_id])).content.decode()
    contestants = ModelEntry.objects.filter(slug__in=ALIKE)
    assert len({m.name[:20] for m in contestants}) == 1
    for key, axis in (("speed", "Decode speed (tokens/s, median)"), ("first-token", "Time to first token (s, median)"),
                      ("memory", "Memory (MB)")):
        chart = section(html, f"frontier-{key}", "</figure>")
        shown = cell_labels(chart)
        assert sorted(shown) == sorted(m.label for m in contestants), shown
        (svg,) = svgs(chart)
        assert axis_titles(svg) == [axis, "Rating (Elo scale)"]
