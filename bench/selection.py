"""Fewer judgements for the same ranking: the adaptive suite-run format against round robin.

A simulation, no model: contestants of known strengths (each repetition draws its own from a
normal distribution of sd `--spread` logits, or evenly spaced `--gap` logits apart) answer
`--prompts` prompts, each answer's quality its contestant's strength plus a per-answer wobble
(normal, sd `--wobble`); a noisy judge reads each pair in each order, as a run's judge does,
and prefers the answer shown first with probability σ(quality first − quality second + `--bias`)
(a position bias), then says "tie" instead with probability `--ties` and flips its answer with
probability `--flips`. Each reading is drawn from its own seeded generator, so both
formats meet exactly the same judge on the readings they share. The two readings combine as in
a run (arena.battles.judging: they must agree, else a tie).

Both formats are driven by the planner itself (arena.suite_runs.plan: the runner's loop with every
generation ending at once, `--window` live at a time, as ARENA_SUITE_IN_FLIGHT; round robin's
pairs do not depend on the verdicts, so it runs with every generation live at once, the same
calls and verdicts in far fewer steps) with the adaptive format's default budget (half of round
robin's calls); each run's ranking is the
Bradley–Terry fit of its verdicts (arena.suite_runs.adaptive.fit), scored by Kendall's tau
against the true order. `--reps` repetitions, each with its own wobble, judge and run seed.

Last line, JSON: adaptive_calls_over_round_robin (mean judge calls of adaptive over round
robin's), kendall_tau_adaptive and kendall_tau_round_robin (means). Goal: the same tau within
0.02 with at most half the judge calls.
Usage: python bench/selection.py [--contestants 8 --prompts 20 --reps 40 ...]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from arena.battles.judging import LEFT, RIGHT, TIE
from arena.suite_runs import adaptive, plan


class Judge:
    """The simulated world of one repetition: answer qualities and a noisy, position-biased judge."""

    def __init__(self, args, rep: int, strengths: dict[int, float]):
        rng = random.Random(f"answers:{rep}")
        self.quality = {(p, c): s + rng.gauss(0, args.wobble) for c, s in strengths.items()
                        for p in range(1, args.prompts + 1)}
        self.args, self.rep = args, rep

    def __call__(self, key) -> str:
        """One reading, in the pair's left/right terms."""
        prompt, left, right, order = key
        rng = random.Random(f"judge:{self.rep}:{key}")
        first, second = (left, right) if order == "left_first" else (right, left)
        edge = self.quality[(prompt, first)] - self.quality[(prompt, second)] + self.args.bias
        first_wins = rng.random() < 1 / (1 + math.exp(-edge))
        if rng.random() < self.args.ties:
            return TIE
        if rng.random() < self.args.flips:
            first_wins = not first_wins
        winner = first if first_wins else second
        return LEFT if winner == left else RIGHT


def run(fmt: str, args, rep: int, judge: Judge) -> tuple[int, list[int], str]:
    """A whole run of `fmt` by the planner: (judge calls, the fitted ranking, why it stopped)."""
    contestants = list(range(args.contestants))
    state = plan.RunState(prompts=list(range(1, args.prompts + 1)), contestants=contestants, format=fmt,
                          seed=rep)
    window = args.window if fmt in plan.DECIDED else 1_000_000
    for _ in range(1_000_000):
        step = plan.plan(state, window)
        if step.finished:
            break
        for key in step.start_answers:
            state.answers[key] = plan.Slot(plan.DONE, state.answer(key).attempts + 1)
        for key in step.start_judgements:
            state.judgements[key] = plan.Slot(plan.DONE, state.judgement(key).attempts + 1, judge(key))
        for pair, outcome in step.record:
            state.verdicts[pair] = outcome
    else:
        raise RuntimeError(f"the {fmt} run never finished")
    results = adaptive.tally((a, b, 1.0 if o == LEFT else 0.0 if o == RIGHT else 0.5)
                             for (_, a, b), o in state.verdicts.items())
    return step.calls, adaptive.fit(contestants, results).ranking(), step.stopped


def kendall_tau(ranking: list[int], truth: list[int]) -> float:
    """Kendall's tau between two orders of the same items (no ties): (concordant − discordant) / pairs."""
    where = {c: i for i, c in enumerate(ranking)}
    signs = [1 if where[a] < where[b] else -1 for a, b in itertools.combinations(truth, 2)]
    return sum(signs) / len(signs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--contestants", type=int, default=8)
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--reps", type=int, default=40)
    parser.add_argument("--gap", type=float, default=0.0,
                        help="logits between neighbouring true strengths (0: each repetition draws its own, "
                             "normal with sd --spread)")
    parser.add_argument("--spread", type=float, default=1.0, help="sd of the strengths drawn when --gap is 0")
    parser.add_argument("--wobble", type=float, default=0.5, help="sd of an answer's quality around its strength")
    parser.add_argument("--bias", type=float, default=0.4, help="the judge's lean to the answer shown first (logits)")
    parser.add_argument("--ties", type=float, default=0.1, help="share of readings the judge calls a tie")
    parser.add_argument("--flips", type=float, default=0.1, help="share of readings the judge gets backwards")
    parser.add_argument("--window", type=int, default=4, help="generations live at once (ARENA_SUITE_IN_FLIGHT)")
    args = parser.parse_args()
    truth = list(range(args.contestants))  # contestant 0 strongest
    rows = {fmt: {"calls": [], "tau": []} for fmt in (plan.ROUND_ROBIN, plan.ADAPTIVE)}
    stops: dict[str, int] = {}
    for rep in range(args.reps):
        draw = random.Random(f"strengths:{rep}")
        drawn = sorted((draw.gauss(0, args.spread) for _ in truth), reverse=True)
        strengths = {c: -args.gap * c if args.gap else drawn[c] for c in truth}
        judge = Judge(args, rep, strengths)
        for fmt, row in rows.items():
            calls, ranking, stopped = run(fmt, args, rep, judge)
            row["calls"].append(calls)
            row["tau"].append(kendall_tau(ranking, truth))
            if fmt == plan.ADAPTIVE:
                stops[stopped] = stops.get(stopped, 0) + 1
    rr, ad = rows[plan.ROUND_ROBIN], rows[plan.ADAPTIVE]
    apart = f"{args.gap} logits apart" if args.gap else f"strengths drawn with sd {args.spread}"
    print(f"{args.contestants} contestants, {apart}, {args.prompts} prompts, {args.reps} repetitions; "
          f"judge: wobble {args.wobble}, position bias {args.bias}, ties {args.ties}, flips {args.flips}")
    for name, row in (("round robin", rr), ("adaptive", ad)):
        print(f"{name:12} judge calls {statistics.mean(row['calls']):7.1f}   Kendall tau "
              f"{statistics.mean(row['tau']):.3f} (min {min(row['tau']):.3f})")
    print("adaptive stopped:", ", ".join(f"{plan.STOP_REASONS[k]} x{v}" for k, v in sorted(stops.items())))
    print(json.dumps({
        "adaptive_calls_over_round_robin": round(statistics.mean(ad["calls"]) / statistics.mean(rr["calls"]), 3),
        "kendall_tau_adaptive": round(statistics.mean(ad["tau"]), 3),
        "kendall_tau_round_robin": round(statistics.mean(rr["tau"]), 3),
    }))


if __name__ == "__main__":
    main()
