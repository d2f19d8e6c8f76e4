"""Do the leaderboard's "95%" intervals hold the true rating 95% of the time? Before (the
bootstrap of the maximum-likelihood fit with one virtual tie per model, as the leaderboard had it
until issue 35) and after (arena.leaderboard.ratings: the Bayesian Bradley–Terry fit, normal prior,
Laplace intervals), side by side on the same simulated verdicts.

A simulation, no database: models of known Elo-scale strength (`--truth`, centred the way both
fits anchor their scale: the models that fought average 1000), `--verdicts` verdicts between
random pairs, each won by the Bradley–Terry probability; with `--ties` t, a verdict is a tie with
probability t·2·min(p, 1 − p) and the expected score stays p. Coverage: the share of (model,
repetition) whose true rating lies inside its 95% interval; width: the median interval, in points.

Usage: python bench/coverage.py [--truth 1200,1070,930,800] [--verdicts 5,20,200] [--reps 400]
       [--ties 0.3] [--rounds 200]
Last line, JSON: {"verdicts": {"5": {"before": ..., "after": ...}, ...}}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from arena.leaderboard import ratings

LN10 = float(np.log(10))


def simulate(truth: np.ndarray, n: int, rng: np.random.Generator, ties: float):
    first = rng.integers(0, len(truth), n)
    second = (first + rng.integers(1, len(truth), n)) % len(truth)
    p = 1 / (1 + 10 ** ((truth[second] - truth[first]) / 400))
    tie = ties * 2 * np.minimum(p, 1 - p)
    u = rng.random(n)
    return first, second, np.where(u < p - tie / 2, 1.0, np.where(u < p + tie / 2, 0.5, 0.0))


def _old_fit(n: int, a, b, s, start=None) -> np.ndarray:
    """The fit the leaderboard had: maximum likelihood plus one virtual tie per model against an
    opponent at 1000, by plain Newton steps (warm-started in the bootstrap)."""
    theta = np.zeros(n) if start is None else start.copy()
    with np.errstate(over="ignore"):  # a diverging resample overflows before it fails
        return _old_newton(n, a, b, s, theta)


def _old_newton(n: int, a, b, s, theta: np.ndarray) -> np.ndarray:
    for _ in range(100):
        p = 1 / (1 + np.exp(theta[b] - theta[a]))
        q = 1 / (1 + np.exp(-theta))
        residual, weight = s - p, p * (1 - p)
        gradient = np.bincount(a, residual, n) - np.bincount(b, residual, n) + (0.5 - q)
        pairs = np.bincount(a * n + b, weight, n * n).reshape(n, n)
        hessian = pairs + pairs.T + np.diag(-q * (1 - q) - np.bincount(a, weight, n) - np.bincount(b, weight, n))
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.max(np.abs(step)) < 1e-7:
            break
    return theta


def before(n: int, a, b, s, rng, rounds: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The old bootstrap's 2.5th and 97.5th percentiles (Elo scale), and how many of its resamples
    failed (numpy.linalg.LinAlgError: refitted from zero, as the page could not have)."""
    point, samples, failed = _old_fit(n, a, b, s), np.empty((rounds, n)), 0
    for r in range(rounds):
        pick = rng.integers(0, len(s), len(s))
        try:
            samples[r] = _old_fit(n, a[pick], b[pick], s[pick], start=point)
        except np.linalg.LinAlgError:
            failed += 1
            samples[r] = _old_fit(n, a[pick], b[pick], s[pick])
    elo = 1000 + 400 * samples / LN10
    return np.percentile(elo, 2.5, axis=0), np.percentile(elo, 97.5, axis=0), failed


def after(n: int, a, b, s) -> tuple[np.ndarray, np.ndarray]:
    post = ratings.posterior(n, a, b, s, np.zeros((len(s), 0)))
    half = 1.959963984540054 * post.sd[:n] * 400 / LN10
    return post.ratings - half, post.ratings + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--truth", default="1200,1070,930,800")
    parser.add_argument("--verdicts", default="5,20,200")
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--ties", type=float, default=0.0)
    parser.add_argument("--rounds", type=int, default=200, help="bootstrap resamples of the old fit")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    truth = np.array([float(x) for x in args.truth.split(",")])
    print(f"truth {args.truth}, ties {args.ties}, {args.reps} repetitions; old bootstrap {args.rounds} resamples")
    print(f"{'verdicts':>8}  {'before':>8} {'width':>6}  {'after':>8} {'width':>6}  bootstrap failures")
    result = {}
    for n_verdicts in (int(v) for v in args.verdicts.split(",")):
        rng = np.random.default_rng(args.seed + n_verdicts)
        hits = {"before": 0, "after": 0}
        widths: dict[str, list[float]] = {"before": [], "after": []}
        total = failures = 0
        for _ in range(args.reps):
            first, second, s = simulate(truth, n_verdicts, rng, args.ties)
            present = np.unique(np.concatenate([first, second]))
            index = np.full(len(truth), -1)
            index[present] = np.arange(len(present))
            a, b, n = index[first], index[second], len(present)
            true = truth[present] - truth[present].mean() + 1000
            low, high, failed = before(n, a, b, s, rng, args.rounds)
            failures += failed
            for name, (lo, hi) in (("before", (low, high)), ("after", after(n, a, b, s))):
                hits[name] += int(np.sum((lo <= true) & (true <= hi)))
                widths[name] += list(hi - lo)
            total += n
        row = {name: round(hits[name] / total, 3) for name in hits}
        row.update({f"{name}_width": round(float(np.median(w)), 0) for name, w in widths.items()})
        result[str(n_verdicts)] = row
        print(f"{n_verdicts:>8}  {row['before']:>8.3f} {row['before_width']:>6.0f}  {row['after']:>8.3f} "
              f"{row['after_width']:>6.0f}  {failures}")
    print(json.dumps({"verdicts": result}))


if __name__ == "__main__":
    main()
