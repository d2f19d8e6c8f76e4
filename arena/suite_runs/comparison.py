"""A suite run compared with an earlier run of the same suite. Pure: no Django, no database, no
clock; arena.suite_runs.comparing reads both runs' answers into `RunAnswers` and calls `compare`.

What it says, from both runs' checked answers (their stored check results, never re-evaluated):

- **Which prompts are the same.** A suite's prompts have no identity across versions: a version's
  prompts are new rows, numbered from 1 (arena.suites.models.SuitePrompt: suite, version,
  position). So prompts are matched by their **text**: the k-th prompt of a text in one run
  with the k-th of the same text in the other. A prompt whose text changed is a prompt
  dropped and a prompt added; both are listed, neither is compared. A matched prompt whose
  checks changed between the runs (its own, or a check added, dropped or redefined: each stored
  result says what its check expected) is compared, and marked.
- **Which contestants stand for which** (`pairs`): each contestant of the later run is compared
  with one of the earlier run's (the user picks: a new quantisation against the model it
  replaces), by default the same catalogue entry; a later contestant with none is not compared.
- **Per prompt and pair of contestants** (`Change`): the answer's outcome before and after
  (passes, fails, no answer: it failed to generate, unchecked) and, check by check (by name;
  a name repeated on one answer counts its occurrences apart), what now passes and what now
  fails. Ordered regressions first: an answer that passed and now fails (or gives no answer),
  then an answer that still fails with a check that passed and now fails, then the answers
  that now pass, then the unchanged.
- **Per check** (`CheckChange`): over the matched prompts, per pair, how many answers the check
  now passes, now fails, or left as they were.
- **Pass-rate changes** (`RateChange`): per pair, over the matched prompts that both answers were
  checked on (the same prompts on both sides), the share of answers passing every check in
  each run and the change, with a 95% interval: **Newcombe's hybrid score interval** (his
  method 10, Statistics in Medicine 1998, 17:873-890) for a difference of two proportions,
  from the two Wilson score intervals. It treats the two runs' answers as independent samples;
  the prompts being the same, their outcomes are usually positively correlated, so the interval
  is, if anything, wider than a paired one would be.
- **Speed changes** (`SpeedChange`): per pair, the median decode rate (tokens/s) and the median
  time to first token over each run's own answers that finished, and the change, with a 95%
  seeded bootstrap percentile interval for the difference of the medians (each run's answers
  resampled apart; none under MIN_SPEEDS answers a side, where a bootstrap of a median says more
  about the few values drawn than about the model). A cached answer (taken from an earlier run) carries another answer's
  measurement: it is left out of the speeds (it was not measured in this run).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from statistics import median

import numpy as np

from arena.leaderboard.reliability import Share, Z, wilson

RESAMPLES = 2000
SEED = 37  # the bootstrap's: the same answers give the same interval on every page load
# Measurements a side needs for a speed interval: a percentile bootstrap of a median takes only the
# sample's own values, and on a handful of answers its interval is far too narrow to trust.
MIN_SPEEDS = 10

PASS, FAIL, NO_ANSWER, UNCHECKED = "pass", "fail", "no answer", "unchecked"
# A Change's kind, in the order the changes are listed (regressions first).
REGRESSED, CHECK_REGRESSED, FIXED, STILL_FAILS, STILL_PASSES, NOT_COMPARED = (
    "regressed", "check_regressed", "fixed", "still_fails", "still_passes", "not_compared")
KINDS = (REGRESSED, CHECK_REGRESSED, FIXED, STILL_FAILS, STILL_PASSES, NOT_COMPARED)
REGRESSIONS = (REGRESSED, CHECK_REGRESSED)
KIND_WORDS = {REGRESSED: "now fails", CHECK_REGRESSED: "still fails, and a check that passed now fails",
              FIXED: "now passes", STILL_FAILS: "still fails", STILL_PASSES: "still passes",
              NOT_COMPARED: "not compared"}
METHOD = ("Newcombe's hybrid score interval (method 10, 1998) for the difference of two proportions, from the "
          "two Wilson score intervals, treating the runs' answers as independent samples")
SPEED_METHOD = (f"medians over each run's own finished answers (cached answers left out); 95% seeded bootstrap "
                f"percentile interval of the difference, {RESAMPLES} resamples of each run apart, given from "
                f"{MIN_SPEEDS} answers a side")
MATCHING = ("Prompts are matched by their text (a suite's prompts have no identity across versions): a prompt "
            "whose text changed counts as one dropped and one added, and is not compared.")


# --- what a run holds ---------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckResult:
    """One check's result on one answer, as stored (arena.suites.checks.Result.as_json)."""

    name: str
    passed: bool
    expected: str = ""
    got: str = ""


@dataclass(frozen=True)
class Prompt:
    """A prompt of the run's suite version: its place (from 1), its text, and what its checks are
    (any value that changes when they change: the suite's defaults and the prompt's own specs)."""

    position: int
    text: str
    checks: str = ""


@dataclass(frozen=True)
class Answer:
    """A contestant's answer to a prompt (its `position`). `status`: the generation's ("done",
    "failed", ...); `passed`: None while unchecked or when the prompt has no check; `cached`:
    taken from an earlier run, its speeds another answer's."""

    position: int
    contestant: str
    status: str
    passed: bool | None = None
    checks: tuple[CheckResult, ...] = ()
    tokens_per_s: float | None = None
    ttft_s: float | None = None
    cached: bool = False

    @property
    def outcome(self) -> str:
        if self.status == "failed":
            return NO_ANSWER
        if self.status != "done" or self.passed is None:
            return UNCHECKED
        return PASS if self.passed else FAIL


@dataclass(frozen=True)
class RunAnswers:
    """What one run holds: its contestants (slugs, in order), its prompts and its answers."""

    contestants: tuple[str, ...]
    prompts: tuple[Prompt, ...]
    answers: tuple[Answer, ...]


# --- what a comparison says ---------------------------------------------------------------------
@dataclass(frozen=True)
class Pair:
    """A contestant of the later run and the earlier run's contestant it is compared with."""

    later: str
    earlier: str


@dataclass(frozen=True)
class CheckDelta:
    """One check (by name) on one matched answer: before and after (PASS, FAIL, or "" when the
    answer had no such check)."""

    name: str
    before: str
    after: str
    expected: str = ""
    got: str = ""
    expected_before: str = ""  # what it expected in the earlier run ("" where it was not there)

    @property
    def redefined(self) -> bool:
        """On both answers, but not the same check: what it expects changed (a check's `expected`
        is its spec in words, never the answer's)."""
        return bool(self.before and self.after and self.expected_before != self.expected)

    @property
    def now_fails(self) -> bool:
        return self.before == PASS and self.after == FAIL

    @property
    def now_passes(self) -> bool:
        return self.before == FAIL and self.after == PASS


@dataclass(frozen=True)
class Change:
    """A matched prompt's answers by a pair of contestants, before (earlier run) and after."""

    kind: str
    pair: Pair
    text: str
    earlier_position: int
    later_position: int
    before: str
    after: str
    checks: tuple[CheckDelta, ...]
    checks_changed: bool

    @property
    def now_failing(self) -> tuple[CheckDelta, ...]:
        return tuple(c for c in self.checks if c.now_fails)

    @property
    def now_passing(self) -> tuple[CheckDelta, ...]:
        return tuple(c for c in self.checks if c.now_passes)

    @property
    def words(self) -> str:
        return KIND_WORDS[self.kind]


@dataclass(frozen=True)
class CheckChange:
    """One check name for one pair of contestants, over the matched prompts where both answers
    carried it: how many answers it now passes, now fails, and left passing or failing."""

    name: str
    pair: Pair
    now_passes: int = 0
    now_fails: int = 0
    still_passes: int = 0
    still_fails: int = 0


@dataclass(frozen=True)
class RateChange:
    """A pair's pass rate before and after, over the same matched, checked prompts, and the
    change (after − before) with its 95% interval (`newcombe`; None without any such prompt)."""

    pair: Pair
    before: Share
    after: Share

    @property
    def difference(self) -> float | None:
        if not self.before.total:
            return None
        return (self.after.count - self.before.count) / self.before.total

    @property
    def interval(self) -> tuple[float, float] | None:
        return newcombe(self.before.count, self.before.total, self.after.count, self.after.total)


@dataclass(frozen=True)
class Median:
    """A median over `n` measurements (None when there is none)."""

    value: float | None
    n: int


@dataclass(frozen=True)
class SpeedChange:
    """One measure (tokens/s or time to first token) of a pair: each run's median, the change
    (after − before) and its 95% bootstrap interval (None under MIN_SPEEDS answers a side)."""

    pair: Pair
    measure: str
    before: Median
    after: Median
    interval: tuple[float, float] | None

    @property
    def difference(self) -> float | None:
        if self.before.value is None or self.after.value is None:
            return None
        return self.after.value - self.before.value

    @property
    def ratio(self) -> float | None:
        if self.before.value is None or self.after.value is None or self.before.value <= 0:
            return None
        return self.after.value / self.before.value


@dataclass(frozen=True)
class Comparison:
    pairs: tuple[Pair, ...]
    unmatched_later: tuple[str, ...]  # later contestants compared with nobody
    unmatched_earlier: tuple[str, ...]  # earlier contestants nobody stands for
    matched_prompts: int
    only_earlier: tuple[Prompt, ...]  # prompts the later run did not have (dropped, or changed text)
    only_later: tuple[Prompt, ...]
    changes: tuple[Change, ...]
    checks: tuple[CheckChange, ...]
    rates: tuple[RateChange, ...]
    speeds: tuple[SpeedChange, ...]
    cached_left_out: int = 0  # answers whose speeds were another answer's
    counts: dict = field(default_factory=dict)

    @property
    def regressions(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.kind in REGRESSIONS)


class PairError(ValueError):
    """Pairs that cannot be: the message is fit for the user."""


# --- the statistics -----------------------------------------------------------------------------
def newcombe(count_a: int, total_a: int, count_b: int, total_b: int, z: float = Z) -> tuple[float, float] | None:
    """Newcombe's hybrid score interval (method 10) for p_b − p_a, p = count / total, from each
    proportion's Wilson score interval (None when either has no trial). Within [-1, 1], and
    never of zero width where a Wald interval would be (0 of n against 0 of m)."""
    wa, wb = wilson(count_a, total_a, z), wilson(count_b, total_b, z)
    if wa is None or wb is None:
        return None
    pa, pb = count_a / total_a, count_b / total_b
    (la, ua), (lb, ub) = wa, wb
    d = pb - pa
    low = d - math.sqrt((pb - lb) ** 2 + (ua - pa) ** 2)
    high = d + math.sqrt((ub - pb) ** 2 + (pa - la) ** 2)
    return max(-1.0, low), min(1.0, high)


def median_difference_interval(before: Sequence[float], after: Sequence[float], resamples: int = RESAMPLES,
                               seed: int = SEED) -> tuple[float, float] | None:
    """A 95% percentile bootstrap interval of median(after) − median(before), each side resampled
    with replacement apart, seeded (None with fewer than MIN_SPEEDS measurements a side)."""
    if len(before) < MIN_SPEEDS or len(after) < MIN_SPEEDS:
        return None
    rng = np.random.default_rng(seed)
    a, b = np.asarray(before, dtype=float), np.asarray(after, dtype=float)
    diffs = (np.median(rng.choice(b, (resamples, len(b))), axis=1)
             - np.median(rng.choice(a, (resamples, len(a))), axis=1))
    low, high = np.percentile(diffs, [2.5, 97.5])
    return float(low), float(high)


# --- matching -----------------------------------------------------------------------------------
def default_pairs(later: Iterable[str], earlier: Iterable[str]) -> tuple[Pair, ...]:
    """Each later contestant with the same entry in the earlier run, where it has one."""
    before = set(earlier)
    return tuple(Pair(slug, slug) for slug in later if slug in before)


def choose_pairs(later: Sequence[str], earlier: Sequence[str], chosen: Iterable[tuple[str, str]]) -> tuple[Pair, ...]:
    """The pairs to compare: each (later slug, earlier slug or "" for none) chosen, and for every
    later contestant not chosen, the same entry (default_pairs). PairError names a slug that is
    not a contestant of its run, or a later contestant chosen twice."""
    picked: dict[str, str] = {}
    for new, old in chosen:
        if new not in later:
            raise PairError(f"{new[:80]!r} is not a contestant of this run ({', '.join(later)}).")
        if old and old not in earlier:
            raise PairError(f"{old[:80]!r} is not a contestant of the earlier run ({', '.join(earlier)}).")
        if new in picked:
            raise PairError(f"{new[:80]!r} is paired twice: pick one earlier contestant for it.")
        picked[new] = old
    before = set(earlier)
    pairs = []
    for slug in later:
        old = picked.get(slug, slug if slug in before else "")
        if old:
            pairs.append(Pair(slug, old))
    return tuple(pairs)


def match_prompts(earlier: Sequence[Prompt], later: Sequence[Prompt]) -> tuple[list[tuple[Prompt, Prompt]],
                                                                               list[Prompt], list[Prompt]]:
    """(earlier, later) prompts of the same text, in the later run's order (the k-th of a text
    with the k-th), and the prompts of each run left without one."""
    by_text: dict[str, list[Prompt]] = defaultdict(list)
    for prompt in sorted(earlier, key=lambda p: p.position):
        by_text[prompt.text].append(prompt)
    matched, only_later = [], []
    for prompt in sorted(later, key=lambda p: p.position):
        if by_text.get(prompt.text):
            matched.append((by_text[prompt.text].pop(0), prompt))
        else:
            only_later.append(prompt)
    only_earlier = sorted((p for left in by_text.values() for p in left), key=lambda p: p.position)
    return matched, only_earlier, only_later


def _named(results: Iterable[CheckResult]) -> dict[str, CheckResult]:
    """An answer's results by name; a name repeated on the answer counts its occurrences apart."""
    seen: Counter = Counter()
    out = {}
    for result in results:
        seen[result.name] += 1
        out[result.name if seen[result.name] == 1 else f"{result.name} ({seen[result.name]})"] = result
    return out


def _deltas(before: Answer | None, after: Answer | None) -> tuple[CheckDelta, ...]:
    old = _named(before.checks) if before and before.outcome in (PASS, FAIL) else {}
    new = _named(after.checks) if after and after.outcome in (PASS, FAIL) else {}
    names = list(old) + [name for name in new if name not in old]
    out = []
    for name in names:
        was, now = old.get(name), new.get(name)
        shown = now or was
        out.append(CheckDelta(name, (PASS if was.passed else FAIL) if was else "",
                              (PASS if now.passed else FAIL) if now else "",
                              shown.expected if shown else "", shown.got if shown else "",
                              was.expected if was else ""))
    return tuple(out)


def _checks_changed(was_prompt: Prompt, now_prompt: Prompt, before: str, after: str,
                    deltas: tuple[CheckDelta, ...]) -> bool:
    """The prompt's own checks differ between the versions, or (both answers checked) a check was
    added, dropped or redefined: the suite's default checks are not kept per version, but each
    stored result says what its check expected."""
    if was_prompt.checks != now_prompt.checks:
        return True
    both = before in (PASS, FAIL) and after in (PASS, FAIL)
    return both and any(d.redefined or not d.before or not d.after for d in deltas)


def _kind(before: str, after: str, deltas: tuple[CheckDelta, ...]) -> str:
    if before == PASS and after in (FAIL, NO_ANSWER):
        return REGRESSED
    if after == PASS and before in (FAIL, NO_ANSWER):
        return FIXED
    if before == after == PASS:
        return STILL_PASSES
    if before in (FAIL, NO_ANSWER) and after in (FAIL, NO_ANSWER):
        return CHECK_REGRESSED if any(d.now_fails for d in deltas) else STILL_FAILS
    return NOT_COMPARED


# --- the comparison -----------------------------------------------------------------------------
def compare(earlier: RunAnswers, later: RunAnswers, pairs: Sequence[Pair] | None = None) -> Comparison:
    """`later` against `earlier`, each pair's later contestant against its earlier one (default:
    the same entries)."""
    if pairs is None:
        pairs = default_pairs(later.contestants, earlier.contestants)
    pairs = tuple(pairs)
    matched, only_earlier, only_later = match_prompts(earlier.prompts, later.prompts)
    old = {(a.position, a.contestant): a for a in earlier.answers}
    new = {(a.position, a.contestant): a for a in later.answers}

    changes: list[Change] = []
    tallies: dict[tuple[str, Pair], Counter] = {}
    rates = []
    for pair in pairs:
        both_checked = passed_before = passed_after = 0
        for was_prompt, now_prompt in matched:
            was, now = old.get((was_prompt.position, pair.earlier)), new.get((now_prompt.position, pair.later))
            before = was.outcome if was else UNCHECKED
            after = now.outcome if now else UNCHECKED
            deltas = _deltas(was, now)
            changes.append(Change(_kind(before, after, deltas), pair, now_prompt.text, was_prompt.position,
                                  now_prompt.position, before, after, deltas,
                                  _checks_changed(was_prompt, now_prompt, before, after, deltas)))
            if before in (PASS, FAIL) and after in (PASS, FAIL):
                both_checked += 1
                passed_before += before == PASS
                passed_after += after == PASS
            for delta in deltas:
                if delta.before and delta.after:
                    tally = tallies.setdefault((delta.name, pair), Counter())
                    tally[("now_passes" if delta.now_passes else "now_fails" if delta.now_fails
                           else "still_passes" if delta.after == PASS else "still_fails")] += 1
        rates.append(RateChange(pair, Share(passed_before, both_checked), Share(passed_after, both_checked)))

    order = {kind: i for i, kind in enumerate(KINDS)}
    changes.sort(key=lambda c: (order[c.kind], c.later_position, pairs.index(c.pair)))
    check_rows = tuple(CheckChange(name, pair, **tally) for (name, pair), tally in tallies.items())
    speeds, cached = _speeds(earlier, later, pairs)
    counts = Counter(c.kind for c in changes)
    return Comparison(
        pairs=pairs,
        unmatched_later=tuple(s for s in later.contestants if s not in {p.later for p in pairs}),
        unmatched_earlier=tuple(s for s in earlier.contestants if s not in {p.earlier for p in pairs}),
        matched_prompts=len(matched), only_earlier=tuple(only_earlier), only_later=tuple(only_later),
        changes=tuple(changes), checks=check_rows, rates=tuple(rates), speeds=speeds, cached_left_out=cached,
        counts={kind: counts.get(kind, 0) for kind in KINDS})


def _measured(run: RunAnswers, slug: str, attribute: str) -> list[float]:
    values = (getattr(a, attribute) for a in run.answers
              if a.contestant == slug and a.status == "done" and not a.cached)
    return [v for v in values if v is not None and math.isfinite(v)]


def _speeds(earlier: RunAnswers, later: RunAnswers, pairs: Sequence[Pair]) -> tuple[tuple[SpeedChange, ...], int]:
    rows = []
    for pair in pairs:
        for measure, attribute in (("tokens_per_s", "tokens_per_s"), ("ttft_s", "ttft_s")):
            before = _measured(earlier, pair.earlier, attribute)
            after = _measured(later, pair.later, attribute)
            rows.append(SpeedChange(pair, measure, Median(median(before) if before else None, len(before)),
                                    Median(median(after) if after else None, len(after)),
                                    median_difference_interval(before, after)))
    slugs = {p.earlier for p in pairs}, {p.later for p in pairs}
    cached = (sum(a.cached for a in earlier.answers if a.contestant in slugs[0])
              + sum(a.cached for a in later.answers if a.contestant in slugs[1]))
    return tuple(rows), cached


# --- JSON -----------------------------------------------------------------------------------------
def _interval(bounds: tuple[float, float] | None) -> list[float] | None:
    return [round(bounds[0], 6), round(bounds[1], 6)] if bounds else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def as_json(comparison: Comparison) -> dict:
    """The comparison as the API gives it (arena.suite_runs.openapi COMPARISON)."""
    def pair(p: Pair) -> dict:
        return {"later": p.later, "earlier": p.earlier}

    def prompt(p: Prompt) -> dict:
        return {"position": p.position, "prompt": p.text}

    return {
        "prompt_matching": MATCHING,
        "pairs": [pair(p) for p in comparison.pairs],
        "unmatched": {"later": list(comparison.unmatched_later), "earlier": list(comparison.unmatched_earlier)},
        "prompts": {"matched": comparison.matched_prompts,
                    "only_earlier": [prompt(p) for p in comparison.only_earlier],
                    "only_later": [prompt(p) for p in comparison.only_later]},
        "counts": dict(comparison.counts),
        "regressions": len(comparison.regressions),
        "changes": [{"kind": c.kind, "words": c.words, **pair(c.pair), "prompt": c.text,
                     "earlier_position": c.earlier_position, "later_position": c.later_position,
                     "before": c.before, "after": c.after, "checks_changed": c.checks_changed,
                     "checks": [{"name": d.name, "before": d.before or None, "after": d.after or None,
                                 "expected": d.expected, "got": d.got, "redefined": d.redefined,
                                 "expected_before": d.expected_before} for d in c.checks]}
                    for c in comparison.changes],
        "checks": [{"name": c.name, **pair(c.pair), "now_passes": c.now_passes, "now_fails": c.now_fails,
                    "still_passes": c.still_passes, "still_fails": c.still_fails} for c in comparison.checks],
        "pass_rates": {"method": METHOD, "pairs": [
            {**pair(r.pair), "prompts": r.before.total,
             "before": {"passed": r.before.count, "total": r.before.total, "rate": _round(r.before.value),
                        "interval": _interval(r.before.interval)},
             "after": {"passed": r.after.count, "total": r.after.total, "rate": _round(r.after.value),
                       "interval": _interval(r.after.interval)},
             "difference": _round(r.difference), "interval": _interval(r.interval)} for r in comparison.rates]},
        "speeds": {"method": SPEED_METHOD, "cached_left_out": comparison.cached_left_out, "pairs": [
            {**pair(s.pair), "measure": s.measure,
             "before": {"median": _round(s.before.value), "n": s.before.n},
             "after": {"median": _round(s.after.value), "n": s.after.n},
             "difference": _round(s.difference), "ratio": _round(s.ratio), "interval": _interval(s.interval)}
            for s in comparison.speeds]},
    }
