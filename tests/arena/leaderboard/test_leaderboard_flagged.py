"""Blind verdicts where an answer names a contestant are left out of the leaderboard unless
asked for (flagged=include), and the page says how many were left out."""

import pytest
from django.urls import reverse

from arena.battles.actions import note_self_identification, vote
from arena.battles.models import Battle
from arena.leaderboard.records import battle_records, flagged_count
from tests.arena.factories import comparison, leaderboard_order, verdict

pytestmark = pytest.mark.django_db


def named_blind_verdict(owner, left, right, outcome: str, text: str) -> Battle:
    """A revealed tournament match whose left answer says `text`, flagged as its run would flag it."""
    battle = comparison(owner, left, right, prompt="Hi", texts=(text, "ok"), mode=Battle.Mode.TOURNAMENT, blind=True)
    note_self_identification(battle)
    assert vote(battle, outcome)
    Battle.objects.filter(id=battle.id).update(revealed=True)
    return battle


@pytest.fixture
def verdicts(owner, catalogue):
    smollm, spec, _awq, gemma = catalogue[:4]
    verdict(owner, smollm, gemma, "left")
    verdict(owner, spec, gemma, "left", blind=True, revealed=True)
    for _ in range(3):  # Gemma wins only where it said who it is
        named_blind_verdict(owner, gemma, spec, "left", "I am Gemma, made by Google.")
    named = comparison(owner, gemma, smollm, prompt="Hi", texts=("Gemma here.", "ok"))  # names were shown anyway
    note_self_identification(named)
    assert named.self_identified and vote(named, "right")
    return catalogue


def test_flagged_blind_verdicts_are_left_out_by_default(verdicts):
    records = battle_records()
    assert len(records) == 3  # two clean verdicts and the named comparison
    assert ("gemma-3-270m", "smollm2-135m-spec", 1.0, True) not in records
    assert flagged_count() == 3 and flagged_count(mode="named") == 0
    assert len(battle_records(flagged=True)) == 6


def test_the_page_says_how_many_were_left_out_and_the_filter_brings_them_back(client, owner, verdicts):
    client.force_login(owner)
    html = client.get(reverse("leaderboard")).content.decode()
    assert "from 3 verdicts" in html
    assert "3 blind verdicts where an answer names a contestant" in html and "were left out" in html
    assert 'name="flagged" value="include">' in html and 'name="flagged" value="include" checked' not in html
    included = client.get(reverse("leaderboard") + "?flagged=include").content.decode()
    assert "from 6 verdicts" in included and "3 of them are blind verdicts where an answer names" in included
    assert 'value="include" checked' in included
    assert leaderboard_order(included).index("gemma-3-270m") < leaderboard_order(html).index("gemma-3-270m")


def test_filters_combine_with_the_flag(client, owner, verdicts):
    client.force_login(owner)
    blind = client.get(reverse("leaderboard") + "?mode=blind").content.decode()
    assert "from 1 verdict;" in blind
    assert "3 blind verdicts where an answer names a contestant" in blind
    named = client.get(reverse("leaderboard") + "?mode=named").content.decode()
    assert "from 2 verdicts" in named and "left out" not in named


def test_all_verdicts_flagged_says_none_for_this_filter(client, owner, catalogue):
    named_blind_verdict(owner, catalogue[3], catalogue[1], "left", "Google trained me.")
    client.force_login(owner)
    html = client.get(reverse("leaderboard")).content.decode()
    assert "No verdicts yet for this filter" in html and "1 blind verdict where an answer names" in html
    assert "from 1 verdict" in client.get(reverse("leaderboard") + "?flagged=include").content.decode()
