"""Judge-human agreement (pure), and the records it reads: people's and judges' verdicts on the
same stored answers, whichever side each was shown on."""

import pytest

from arena.battles.models import Battle
from arena.leaderboard.agreement import Agreement, agreement, winner
from arena.leaderboard.records import agreement_records, battle_records
from tests.arena.factories import verdict


def test_agreement_counts_pairs_judged_by_both_whatever_the_orientation():
    verdicts = [
        ("a", "b", "left", False), ("b", "a", "right", True),  # same winner, sides swapped: agree
        ("c", "d", "left", False), ("c", "d", "right", True),  # disagree
        ("e", "f", "tie", False), ("e", "f", "both_bad", True),  # neither names a winner: agree
        ("g", "h", "left", False),  # people only: not counted
        ("i", "j", "left", True),  # judge only: not counted
    ]
    assert agreement(verdicts) == Agreement(2 / 3, 3)


def test_the_latest_verdict_of_each_kind_counts_and_no_pair_means_no_rate():
    changed_mind = [("a", "b", "right", False), ("a", "b", "left", True), ("a", "b", "left", False)]
    assert agreement(changed_mind) == Agreement(1.0, 1)
    assert agreement([("a", "b", "left", False)]) == Agreement(None, 0)
    assert winner("a", "b", "tie") is None and winner("a", "b", "right") == "b"


@pytest.mark.django_db
def test_judged_verdicts_are_kept_apart_and_compared_with_peoples(owner, catalogue):
    smollm, spec, _awq, gemma = catalogue[:4]
    human = verdict(owner, smollm, gemma, "left")
    other = verdict(owner, spec, gemma, "right")
    for battle, outcome in ((human, "right"), (other, "right")):  # a judge saw both pairs, sides swapped
        Battle.objects.create(owner=owner, mode=Battle.Mode.SUITE, left=battle.right, right=battle.left,
                              outcome=outcome, voted_at=battle.voted_at, judge=catalogue[1], judge_template_version=1)
    assert battle_records() == [("smollm2-135m-spec", "gemma-3-270m", 0.0, False),
                                ("smollm2-135m", "gemma-3-270m", 1.0, False)]
    assert len(battle_records(source="judge")) == 2 and len(battle_records(source="both")) == 4
    # Sides swapped: "right" names smollm2 (agrees with people) and spec (people named gemma).
    assert agreement(agreement_records()) == Agreement(0.5, 2)
