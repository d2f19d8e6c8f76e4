"""The leaderboard page's uncertainty in words, on stored verdicts: each entry's rank range from
the bootstrap, the provisional mark below the setting's verdict count (with its explanation), and
the form that estimates how many more verdicts would separate two chosen entries."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from arena.leaderboard.ratings import leaderboard
from arena.leaderboard.records import battle_records
from tests.arena.factories import leaderboard_order, verdict

pytestmark = pytest.mark.django_db

TOP, SPEC, AWQ, GEMMA = "smollm2-135m", "smollm2-135m-spec", "smollm2-135m-awq", "gemma-3-270m"


@pytest.fixture
def verdicts(owner, catalogue):
    """smollm2 beats spec and awq every time; spec and awq are even (ties, one win each); both
    beat gemma, spec 3 times in 4 (one loss), awq 8 times in 8. smollm2 and gemma never meet."""
    smollm, spec, awq, gemma = catalogue[:4]
    for _ in range(8):
        verdict(owner, smollm, spec, "left")
        verdict(owner, awq, smollm, "right")
        verdict(owner, awq, gemma, "left")
    for outcome in ("tie", "tie", "both_bad", "tie", "left", "right"):
        verdict(owner, spec, awq, outcome)
    for outcome in ("left", "left", "right", "left"):
        verdict(owner, spec, gemma, outcome)
    return catalogue


def page(client, query: str = "") -> str:
    return client.get(reverse("leaderboard") + query).content.decode()


def row(html: str, slug: str) -> str:
    found = re.search(rf'<tr data-model="{re.escape(slug)}">(.*?)</tr>', html, re.S)
    assert found, f"no row for {slug}"
    return found.group(1)


def separation(html: str) -> str:
    found = re.search(r'<p id="separation" class="separation">(.*?)</p>', html, re.S)
    assert found, "no separation estimate"
    return " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split())


def test_each_entry_shows_its_rank_range_from_the_posterior(client, owner, verdicts):
    client.force_login(owner)
    html = page(client)
    rows = {r.model: r for r in leaderboard([(a, b, s) for a, b, s, _t in battle_records()])}
    # 16 straight wins put smollm2 first; gemma lost 11 of 12, but only 4 verdicts to spec (3 of them
    # lost): gemma may be 3rd and spec 4th.
    assert rows[TOP].rank_range == "1st" and rows[GEMMA].rank_range == "3rd–4th"
    assert rows[SPEC].rank_range == "2nd–4th" and rows[AWQ].rank_range == "2nd–3rd"
    for slug, rating in rows.items():
        assert f'<td class="rank-range">{rating.rank_range}</td>' in row(html, slug)
    assert "<th>Rank range (95%)</th>" in html
    assert "the ranks a model takes in 95% of draws from the fit's posterior" in html


def test_provisional_marks_entries_below_the_setting_s_count(client, owner, verdicts, settings):
    """Verdicts in this view: smollm2 16, awq 22, spec 18, gemma 12."""
    client.force_login(owner)
    mark = '<span class="provisional"'
    settings.ARENA_LEADERBOARD_PROVISIONAL_VERDICTS = 18
    html = page(client)
    assert mark in row(html, TOP) and mark in row(html, GEMMA)
    assert mark not in row(html, SPEC) and mark not in row(html, AWQ)  # 18: at the threshold, not below
    assert ("<strong>Provisional</strong>: rated on fewer than 18 verdicts in this view (2 models)" in html)
    settings.ARENA_LEADERBOARD_PROVISIONAL_VERDICTS = 12
    html = page(client)
    assert mark not in html and 'id="provisional-note"' not in html
    settings.ARENA_LEADERBOARD_PROVISIONAL_VERDICTS = 13
    html = page(client)
    assert [slug for slug in leaderboard_order(html) if mark in row(html, slug)] == [GEMMA]
    assert "fewer than 13 verdicts in this view (1 model)" in html


def test_the_separation_form_defaults_to_the_top_two(client, owner, verdicts):
    client.force_login(owner)
    html = page(client)
    assert f'<option value="{TOP}" selected>' in html.split('name="a"')[1].split("</select>")[0]
    assert f'<option value="{AWQ}" selected>' in html.split('name="b"')[1].split("</select>")[0]
    assert separation(html).startswith("SmolLM2 135M")  # the top entry's label
    assert "Already separated: the interval leaves out 50%." in separation(html)  # 8 wins in 8


def test_the_estimate_in_each_case(client, owner, verdicts):
    client.force_login(owner)
    more = separation(page(client, f"?a={SPEC}&b={GEMMA}"))
    assert "beat" in more and "in 75% of their 4 verdicts (ties count half; 95% interval 30–95%)" in more
    assert "About 12 more verdicts between them would separate them if this rate holds (16 in all" in more
    even = separation(page(client, f"?a={AWQ}&b={SPEC}"))
    assert "in 50% of their 6 verdicts" in even
    assert "Cannot be told apart at this rate (win rate 50%)" in even
    unmet = separation(page(client, f"?a={TOP}&b={GEMMA}"))
    assert "have not met in this view. Their ratings predict" in unmet and "verdicts between them would" in unmet
    assert separation(page(client, f"?a={TOP}&b={TOP}")) == "Choose two different models rated in this view."
    assert separation(page(client, f"?a={TOP}&b=no-such-model")) == "Choose two different models rated in this view."


def test_the_separation_form_keeps_the_filters(client, owner, verdicts):
    client.force_login(owner)
    html = page(client, "?mode=named&days=30&source=both&style=1")
    form = html.split('id="separation-form"')[1].split("</form>")[0]
    for hidden in ('name="mode" value="named"', 'name="days" value="30"', 'name="kind" value="all"',
                   'name="style" value="1"'):
        assert hidden in form
    assert 'name="flagged"' not in form
