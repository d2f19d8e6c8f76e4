"""The pure comparison of two suite runs (arena/suite_runs/comparison.py): Newcombe's interval
against the published figures, prompt matching by text, the changes per prompt and check
(regressions first), and properties over generated runs (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arena.suite_runs import comparison as cmp
from arena.suite_runs.comparison import Answer, CheckResult, Pair, Prompt, RunAnswers


# --- Newcombe's hybrid score interval -----------------------------------------------------------
@pytest.mark.parametrize(("a", "b", "expected"), [
    # Newcombe 1998 (Stat Med 17:873), table II, method 10: 56/70 − 48/80 and 9/10 − 3/10.
    ((48, 80), (56, 70), (0.0524, 0.3339)),
    ((3, 10), (9, 10), (0.1705, 0.8090)),
])
def test_newcombe_gives_the_published_intervals(a, b, expected):
    low, high = cmp.newcombe(*a, *b)
    assert (round(low, 4), round(high, 4)) == expected


def test_newcombe_without_a_trial_is_none():
    assert cmp.newcombe(0, 0, 1, 2) is None and cmp.newcombe(1, 2, 0, 0) is None


@given(st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.integers(1, 400).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_newcombe_holds_the_difference_stays_in_range_and_is_antisymmetric(a, b):
    low, high = cmp.newcombe(*a, *b)
    d = b[0] / b[1] - a[0] / a[1]
    assert -1 <= low <= d <= high <= 1
    assert high - low > 0  # never zero width, even at 0 of n against 0 of m
    back = cmp.newcombe(*b, *a)
    assert back == pytest.approx((-high, -low))


def test_the_bootstrap_of_medians_is_seeded_and_needs_ten_measurements_a_side():
    before, after = [10 + i % 4 for i in range(10)], [20 + i % 3 for i in range(12)]
    assert cmp.median_difference_interval(before[:9], after) is None  # a handful says too little
    first = cmp.median_difference_interval(before, after)
    assert first == cmp.median_difference_interval(before, after)
    assert 6 <= first[0] <= first[1] <= 12
    assert cmp.median_difference_interval([5] * 10, [7] * 10) == (2.0, 2.0)


# --- hand-made runs -----------------------------------------------------------------------------
def result(name: str, passed: bool) -> CheckResult:
    return CheckResult(name, passed, expected=f"expected of {name}", got=f"got of {name}")


def answer(position: int, slug: str, *checks: tuple[str, bool], status: str = "done", **kw) -> Answer:
    results = tuple(result(n, p) for n, p in checks)
    passed = all(p for _n, p in checks) if checks and status == "done" else None
    return Answer(position, slug, status, passed, results, **kw)


PROMPTS = (Prompt(1, "Capital of France?", "c1"), Prompt(2, "Say hi.", "c2"), Prompt(3, "Two plus two?", "c3"))


def test_regressions_come_first_then_what_now_passes_then_the_unchanged():
    earlier = RunAnswers(("full",), PROMPTS, (
        answer(1, "full", ("names Paris", True), ("short", True)),
        answer(2, "full", ("greets", False)),
        answer(3, "full", ("four", False), ("short", True)),
    ))
    later = RunAnswers(("q4",), PROMPTS, (
        answer(1, "q4", ("names Paris", False), ("short", True)),   # regressed
        answer(2, "q4", ("greets", True)),                          # fixed
        answer(3, "q4", ("four", False), ("short", False)),         # still fails, "short" now fails
    ))
    result_ = cmp.compare(earlier, later, [Pair("q4", "full")])
    kinds = [(c.kind, c.later_position) for c in result_.changes]
    assert kinds == [(cmp.REGRESSED, 1), (cmp.CHECK_REGRESSED, 3), (cmp.FIXED, 2)]
    assert [c.later_position for c in result_.regressions] == [1, 3]
    first = result_.changes[0]
    assert [d.name for d in first.now_failing] == ["names Paris"] and first.now_failing[0].got == "got of names Paris"
    assert [d.name for d in result_.changes[2].now_passing] == ["greets"]
    rate = result_.rates[0]
    assert (rate.before.count, rate.after.count, rate.before.total) == (1, 1, 3) and rate.difference == 0
    by_name = {c.name: c for c in result_.checks}
    assert (by_name["short"].still_passes, by_name["short"].now_fails) == (1, 1)
    assert result_.counts[cmp.REGRESSED] == 1 and result_.counts[cmp.STILL_PASSES] == 0


def test_prompts_are_matched_by_text_across_versions_and_the_rest_listed():
    v2 = (Prompt(1, "Say hi.", "c2"), Prompt(2, "Capital of France?", "changed"), Prompt(3, "A new one", ""))
    earlier = RunAnswers(("m",), PROMPTS, tuple(answer(p.position, "m", ("x", True)) for p in PROMPTS))
    later = RunAnswers(("m",), v2, tuple(answer(p.position, "m", ("x", True)) for p in v2))
    result_ = cmp.compare(earlier, later)
    assert result_.matched_prompts == 2
    assert [p.text for p in result_.only_earlier] == ["Two plus two?"]
    assert [p.text for p in result_.only_later] == ["A new one"]
    moved = {c.text: c for c in result_.changes}
    assert (moved["Capital of France?"].earlier_position, moved["Capital of France?"].later_position) == (1, 2)
    assert moved["Capital of France?"].checks_changed and not moved["Say hi."].checks_changed


def test_a_failed_answer_is_no_answer_and_losing_a_passing_answer_is_a_regression():
    earlier = RunAnswers(("m",), PROMPTS[:2], (answer(1, "m", ("x", True)), answer(2, "m", ("x", False))))
    later = RunAnswers(("m",), PROMPTS[:2], (answer(1, "m", status="failed"), answer(2, "m", status="failed")))
    result_ = cmp.compare(earlier, later)
    assert [(c.kind, c.before, c.after) for c in result_.changes] == [
        (cmp.REGRESSED, cmp.PASS, cmp.NO_ANSWER), (cmp.STILL_FAILS, cmp.FAIL, cmp.NO_ANSWER)]
    assert result_.rates[0].before.total == 0 and result_.rates[0].interval is None


def test_unchecked_answers_and_missing_answers_are_not_compared():
    earlier = RunAnswers(("m",), PROMPTS[:2], (answer(1, "m"), answer(2, "m", ("x", True))))
    later = RunAnswers(("m",), PROMPTS[:2], (answer(1, "m", ("x", False)),))
    assert {c.kind for c in cmp.compare(earlier, later).changes} == {cmp.NOT_COMPARED}


def test_a_repeated_check_name_counts_its_occurrences_apart():
    earlier = RunAnswers(("m",), PROMPTS[:1], (answer(1, "m", ("contains", True), ("contains", True)),))
    later = RunAnswers(("m",), PROMPTS[:1], (answer(1, "m", ("contains", True), ("contains", False)),))
    (change,) = cmp.compare(earlier, later).changes
    assert [d.name for d in change.now_failing] == ["contains (2)"]


def test_a_check_redefined_between_the_runs_is_marked():
    def run(expected: str, passed: bool) -> RunAnswers:
        check = CheckResult("answers", passed, expected=expected, got="3 tokens")
        return RunAnswers(("m",), PROMPTS[:1], (Answer(1, "m", "done", passed, (check,)),))

    (change,) = cmp.compare(run("at least 1 token", True), run("at most 0 tokens", False)).changes
    (delta,) = change.now_failing
    assert change.kind == cmp.REGRESSED and change.checks_changed
    assert delta.redefined and delta.expected_before == "at least 1 token" and delta.expected == "at most 0 tokens"
    (same,) = cmp.compare(run("at least 1 token", True), run("at least 1 token", False)).changes
    assert not same.checks_changed and not same.now_failing[0].redefined


def test_speeds_leave_cached_answers_out():
    earlier = RunAnswers(("m",), PROMPTS, tuple(answer(p.position, "m", tokens_per_s=10.0 + p.position, ttft_s=0.5)
                                                 for p in PROMPTS))
    later = RunAnswers(("m",), PROMPTS, (
        answer(1, "m", tokens_per_s=30.0, ttft_s=0.2), answer(2, "m", tokens_per_s=32.0, ttft_s=0.3),
        answer(3, "m", tokens_per_s=12.0, ttft_s=0.5, cached=True)))
    result_ = cmp.compare(earlier, later)
    tps = next(s for s in result_.speeds if s.measure == "tokens_per_s")
    assert (tps.before.value, tps.before.n, tps.after.value, tps.after.n) == (12.0, 3, 31.0, 2)
    assert tps.difference == 19.0 and tps.interval is None and result_.cached_left_out == 1  # 3 and 2: too few


def test_pairs_default_to_the_same_entry_and_a_choice_is_checked():
    assert cmp.choose_pairs(["a", "b", "c"], ["a", "c", "z"], []) == (Pair("a", "a"), Pair("c", "c"))
    assert cmp.choose_pairs(["a", "b"], ["a", "z"], [("b", "z"), ("a", "")]) == (Pair("b", "z"),)
    with pytest.raises(cmp.PairError, match="'q' is not a contestant of this run"):
        cmp.choose_pairs(["a"], ["a"], [("q", "a")])
    with pytest.raises(cmp.PairError, match="not a contestant of the earlier run"):
        cmp.choose_pairs(["a"], ["a"], [("a", "q")])
    with pytest.raises(cmp.PairError, match="paired twice"):
        cmp.choose_pairs(["a"], ["a", "b"], [("a", "a"), ("a", "b")])


# --- properties over generated runs -------------------------------------------------------------
SLUGS = ("m1", "m2", "m3")
TEXTS = ("alpha", "beta", "gamma", "delta")
CHECK_NAMES = ("c1", "c2", "c3")


@st.composite
def runs(draw):
    texts = draw(st.lists(st.sampled_from(TEXTS), min_size=1, max_size=6))  # repeats allowed
    prompts = tuple(Prompt(i, t, draw(st.sampled_from(("", "x")))) for i, t in enumerate(texts, start=1))
    contestants = tuple(draw(st.lists(st.sampled_from(SLUGS), min_size=1, max_size=3, unique=True)))
    answers = []
    for p in prompts:
        for slug in contestants:
            status = draw(st.sampled_from(("done", "done", "done", "failed", "missing")))
            if status == "missing":
                continue
            names = draw(st.lists(st.sampled_from(CHECK_NAMES), max_size=3))
            checks = tuple(result(n, draw(st.booleans())) for n in names)
            speed = draw(st.none() | st.floats(1, 100))
            answers.append(Answer(p.position, slug, status,
                                  all(c.passed for c in checks) if checks and status == "done" else None,
                                  checks, speed, speed and 1 / speed, draw(st.booleans())))
    return RunAnswers(contestants, prompts, tuple(answers))


@settings(max_examples=150, deadline=None)
@given(runs(), runs())
def test_every_matched_prompt_and_pair_is_one_change_listed_regressions_first(earlier, later):
    result_ = cmp.compare(earlier, later)
    assert len(result_.changes) == result_.matched_prompts * len(result_.pairs)
    assert sum(result_.counts.values()) == len(result_.changes)
    ranks = [cmp.KINDS.index(c.kind) for c in result_.changes]
    assert ranks == sorted(ranks)
    for change in result_.changes:
        assert (change.kind == cmp.REGRESSED) == (change.before == cmp.PASS and change.after in (cmp.FAIL,
                                                                                                  cmp.NO_ANSWER))
        assert (change.kind == cmp.FIXED) == (change.after == cmp.PASS and change.before in (cmp.FAIL, cmp.NO_ANSWER))
        if change.kind == cmp.CHECK_REGRESSED:
            assert change.now_failing
    for rate in result_.rates:
        assert rate.before.total == rate.after.total <= result_.matched_prompts
        if rate.before.total:
            low, high = rate.interval
            assert low <= rate.difference <= high
    texts_before = sorted(p.text for p in earlier.prompts)
    texts_after = sorted(p.text for p in later.prompts)
    common = sum(min(texts_before.count(t), texts_after.count(t)) for t in set(texts_before))
    assert result_.matched_prompts == common
    assert common + len(result_.only_earlier) == len(earlier.prompts)
    assert common + len(result_.only_later) == len(later.prompts)


@settings(max_examples=100, deadline=None)
@given(runs(), runs())
def test_swapping_the_runs_swaps_regressions_and_fixes_and_negates_the_rates(earlier, later):
    forward, backward = cmp.compare(earlier, later), cmp.compare(later, earlier)
    assert forward.counts[cmp.REGRESSED] == backward.counts[cmp.FIXED]
    assert forward.counts[cmp.FIXED] == backward.counts[cmp.REGRESSED]
    assert forward.counts[cmp.STILL_PASSES] == backward.counts[cmp.STILL_PASSES]
    backwards = {rate.pair.later: rate for rate in backward.rates}  # default pairs: the same entries
    assert set(backwards) == {rate.pair.later for rate in forward.rates}
    for there in forward.rates:
        back = backwards[there.pair.earlier]
        assert there.before == back.after and there.after == back.before
        if there.interval:
            assert back.interval == pytest.approx((-there.interval[1], -there.interval[0]))


@settings(max_examples=60, deadline=None)
@given(runs())
def test_a_run_against_itself_changes_nothing(run):
    result_ = cmp.compare(run, run)
    assert not result_.regressions and result_.counts[cmp.FIXED] == 0
    assert all(r.difference in (0, None) for r in result_.rates)
    assert all(s.difference in (0, None) for s in result_.speeds)
    assert result_.matched_prompts == len(run.prompts) and not result_.only_later
    assert cmp.as_json(result_)["regressions"] == 0
