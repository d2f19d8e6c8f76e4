"""A jury's verdict (arena.battles.judging, pure): each judge's order-consistent verdict, then the
majority of the judges who answered; no majority (or nobody) is a tie. One judge is today's rule."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.battles.judging import (
    MAX_REASON_CHARS,
    ORDERS,
    VERDICTS,
    agreement,
    by_judge,
    combine_orders,
    judge_verdict,
    judgement,
    jury_verdict,
    one_line,
    orders_agree,
)

verdicts = st.sampled_from(sorted(VERDICTS))
maybe = st.one_of(st.just(""), verdicts)  # "": the judge abstains (a reading failed for good)


@pytest.mark.parametrize("given_, outcome", [
    (["left", "left", "right"], "left"), (["right", "tie", "right"], "right"),
    (["left", "tie", "right"], "tie"),  # three ways: no majority
    (["tie", "tie", "left"], "tie"), (["both_bad", "both_bad", "left"], "both_bad"),
    (["left", "", "left"], "left"), (["left", "", "right"], "tie"), (["left", "", "tie"], "tie"),
    (["", "", "right"], "right"), (["", "", ""], "tie"), ([], "tie"),
])
def test_the_majority_of_the_judges_who_answered(given_, outcome):
    assert jury_verdict(given_) == outcome


def test_a_judges_verdict_needs_both_readings():
    assert judge_verdict("left", "left") == "left" and judge_verdict("left", "right") == "tie"
    assert judge_verdict("", "left") == "" == judge_verdict("left", "")
    with pytest.raises(ValueError):
        jury_verdict(["left", "sideways"])


@given(verdicts, verdicts)
def test_one_judge_is_the_order_swap_rule(first, second):
    assert jury_verdict([judge_verdict(first, second)]) == combine_orders(first, second)


@given(st.lists(maybe, max_size=3), st.randoms())
def test_the_majority_ignores_the_judges_order_and_needs_more_than_half(given_, rng):
    outcome = jury_verdict(given_)
    shuffled = list(given_)
    rng.shuffle(shuffled)
    assert jury_verdict(shuffled) == outcome
    answered = [v for v in given_ if v]
    if 2 * answered.count(outcome) <= len(answered):
        assert outcome == "tie"  # a tie is the only verdict that may stand without a majority
    if answered and len(set(answered)) == 1:
        assert outcome == answered[0]  # unanimous


def test_a_reading_names_its_judge_and_keeps_a_one_line_reason():
    reading = judgement("right_first", "{}", "left", judge="gemma", reason="Left is\n  right.")
    assert reading == {"order": "right_first", "raw": "{}", "verdict": "left", "judge": "gemma",
                       "reason": "Left is right."}
    assert judgement("left_first", "x", "tie") == {"order": "left_first", "raw": "x", "verdict": "tie"}
    long = one_line("word " * 100)
    assert len(long) == MAX_REASON_CHARS and long.endswith("…")


def test_readings_group_by_judge_and_agreement_counts_each_judge():
    one = [judgement(o, "r", "left") for o in ORDERS]  # stored before juries: no judge named
    jury = [judgement(o, "r", v, judge=j, reason="") for j, vs in (("a", ("left", "left")), ("b", ("left", "right")))
            for o, v in zip(ORDERS, vs, strict=True)]
    assert list(by_judge(one, "first")) == ["first"] and list(by_judge(jury)) == ["a", "b"]
    assert orders_agree(one) is True and orders_agree(jury) is None  # a jury's tie has other causes
    assert agreement([one, jury]) == (2, 3)
