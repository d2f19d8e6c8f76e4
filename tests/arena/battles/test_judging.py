"""Judged verdicts: the order-swap rule (pure) and the battle record that stores a judge's
verdict beside people's, sharing the stored answers a suite run pairs round robin."""

import csv
import io

import pytest

from arena.battles.actions import vote
from arena.battles.judging import combine_orders, judgement, seen_as
from arena.battles.models import Battle
from arena.generations.models import Generation
from arena.history import queries
from tests.arena.factories import comparison, generation


def judge_both_orders(prefers) -> str:
    """A judge given as "which position it picks" (first or second shown), asked in both orders."""
    verdicts = [seen_as(order, shown_first_wins=prefers(order)) for order in ("left_first", "right_first")]
    return combine_orders(*verdicts)


def test_a_judge_that_always_prefers_the_first_shown_answer_yields_ties():
    assert judge_both_orders(lambda order: True) == "tie"
    assert judge_both_orders(lambda order: False) == "tie"  # always the second: a tie too


def test_a_judge_that_always_prefers_the_same_answer_yields_that_answer():
    # The left answer is shown first in "left_first" and second in "right_first".
    assert judge_both_orders(lambda order: order == "left_first") == "left"
    assert judge_both_orders(lambda order: order == "right_first") == "right"


@pytest.mark.parametrize("first,second,outcome", [
    ("left", "left", "left"), ("right", "right", "right"), ("tie", "tie", "tie"), ("both_bad", "both_bad", "both_bad"),
    ("left", "right", "tie"), ("left", "tie", "tie"), ("both_bad", "right", "tie"),
])
def test_the_verdict_is_kept_only_when_both_orders_agree(first, second, outcome):
    assert combine_orders(first, second) == outcome


def test_unknown_verdicts_and_orders_are_refused():
    with pytest.raises(ValueError):
        combine_orders("left", "A")
    with pytest.raises(ValueError):
        judgement("sideways", "raw", "left")
    assert judgement("left_first", "[[A]]", "left") == {"order": "left_first", "raw": "[[A]]", "verdict": "left"}


@pytest.mark.django_db
def test_one_answer_takes_part_in_a_human_battle_and_a_judged_one(owner, catalogue):
    human = comparison(owner, catalogue[0], catalogue[3])
    assert vote(human, "left") and not human.judged
    judgements = [judgement("left_first", "A is better", "left"), judgement("right_first", "B is better", "left")]
    judged = Battle.objects.create(owner=owner, mode=Battle.Mode.SUITE, left=human.left, right=human.right,
                                   outcome=combine_orders(*(j["verdict"] for j in judgements)), judge=catalogue[1],
                                   judge_template_version=2, judgements=judgements)
    judged.refresh_from_db()
    assert judged.judged and judged.outcome == "left" and judged.judgements[1]["raw"] == "B is better"
    assert set(human.left.battles_as_left.all()) == {human, judged}
    assert Battle.of_generation(human.left) == human and Battle.of_generation(human.right) == human
    assert list(catalogue[1].judged_battles.all()) == [judged]
    assert not vote(judged, "right") and Battle.objects.get(id=judged.id).outcome == "left"  # no person's vote


@pytest.mark.django_db
def test_a_battle_answer_is_still_no_playground_generation_and_blind_ones_stay_hidden(owner, catalogue):
    alone = generation(owner, catalogue[0], text="Blue.")
    battle = comparison(owner, catalogue[0], catalogue[3], mode=Battle.Mode.TOURNAMENT, blind=True)
    Battle.objects.create(owner=owner, mode=Battle.Mode.SUITE, left=battle.right, right=alone, outcome="tie",
                          judge=catalogue[1])
    assert list(queries.generations(owner)) == []  # `alone` is now a side of a (judged) battle too
    assert set(Generation.objects.visible()) == {alone}
    Battle.objects.filter(id=battle.id).update(revealed=True)
    assert set(Generation.objects.visible()) == {alone, battle.left, battle.right}


@pytest.mark.django_db
def test_the_export_says_which_verdicts_a_model_judge_gave(client, owner, catalogue):
    human = comparison(owner, catalogue[0], catalogue[3])
    assert vote(human, "left")
    Battle.objects.create(owner=owner, mode=Battle.Mode.SUITE, left=human.right, right=human.left, outcome="right",
                          judge=catalogue[1], judge_template_version=1)
    client.force_login(owner)
    body = b"".join(client.get("/history/export/battles.csv").streaming_content).decode()
    rows = {row["mode"]: row for row in csv.DictReader(io.StringIO(body))}
    assert rows["comparison"]["judge"] == "" and rows["suite"]["judge"] == catalogue[1].slug
    suites = client.get("/history/export/battles.csv?mode=suite")
    assert len(list(csv.DictReader(io.StringIO(b"".join(suites.streaming_content).decode())))) == 1


@pytest.mark.django_db
def test_the_admin_shows_a_judges_fields_read_only(client, owner, catalogue):
    from django.contrib.auth import get_user_model

    human = comparison(owner, catalogue[0], catalogue[3])
    judged = Battle.objects.create(owner=owner, mode=Battle.Mode.SUITE, left=human.left, right=human.right,
                                   outcome="tie", judge=catalogue[1], judge_template_version=3,
                                   judgements=[judgement("left_first", "First is better", "left"),
                                               judgement("right_first", "First is better", "right")])
    client.force_login(get_user_model().objects.create_superuser("staff", password="staff-pass-123"))
    html = client.get(f"/admin/battles/battle/{judged.id}/change/").content.decode()
    assert "First is better" in html and 'name="judge"' not in html and 'name="judgements"' not in html
    assert client.get("/admin/battles/battle/?mode=suite").status_code == 200
