"""Bradley–Terry ratings from battle records, with bootstrap confidence intervals and
ranks that share a place where intervals overlap (as LMSYS Chatbot Arena ranks).

Pure: it takes (model_a, model_b, score) triples, score 1 when a won, 0 when b won and
0.5 for a tie (a tie counts as half a win each way), and knows nothing of Django.

The fit is the maximum-likelihood Bradley–Terry model (a logistic model of the rating
difference, solved by Newton's method), with a weak prior: each model also plays one
virtual tie against an average opponent, which keeps ratings finite for a model that
never won (or never lost) and is negligible once a model has a few dozen battles. The
virtual opponent (strength 1) also anchors the scale, which a pure Bradley–Terry fit
leaves free. Ratings are on the Elo scale:
1000 + 400·log10(strength), so the average opponent stands at 1000.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BASE, SCALE = 1000.0, 400.0
PRIOR_TIES = 1.0  # virtual ties per model against an average opponent
MAX_ITERATIONS = 100
LN10 = float(np.log(10))
TOLERANCE = 1e-7  # in log-strength: well under a thousandth of a rating point


@dataclass(frozen=True)
class Rating:
    model: str
    rating: float
    lower: float  # 95% bootstrap interval
    upper: float
    rank: int
    battles: int
    wins: float  # ties count half
    win_rate: float


def fit(models: list[str], battles: list[tuple[str, str, float]]) -> dict[str, float]:
    """Elo-scale Bradley–Terry ratings of `models` from `battles` (a, b, score of a)."""
    index = {m: i for i, m in enumerate(models)}
    a = np.array([index[x] for x, _y, _s in battles], dtype=int)
    b = np.array([index[y] for _x, y, _s in battles], dtype=int)
    s = np.array([score for _x, _y, score in battles], dtype=float)
    return dict(zip(models, _ratings(len(models), a, b, s), strict=False))


def _ratings(n: int, a: np.ndarray, b: np.ndarray, s: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """Newton's method on the log-posterior in θ = ln(strength): a few steps to convergence
    (the prior makes it strictly concave, so every step is well defined)."""
    theta = np.zeros(n) if start is None else (start - BASE) / SCALE * LN10
    for _ in range(MAX_ITERATIONS):
        p = 1 / (1 + np.exp(theta[b] - theta[a]))  # P(a beats b)
        q = 1 / (1 + np.exp(-theta))  # P(beating the virtual opponent)
        residual, weight = s - p, p * (1 - p)
        gradient = (np.bincount(a, weights=residual, minlength=n) - np.bincount(b, weights=residual, minlength=n)
                    + PRIOR_TIES * (0.5 - q))
        hessian = np.diag(-PRIOR_TIES * q * (1 - q) - np.bincount(a, weights=weight, minlength=n)
                          - np.bincount(b, weights=weight, minlength=n))
        np.add.at(hessian, (a, b), weight)
        np.add.at(hessian, (b, a), weight)
        step = np.linalg.solve(hessian, gradient)
        theta -= step
        if np.max(np.abs(step)) < TOLERANCE:
            break
    return BASE + SCALE * theta / LN10


def leaderboard(battles: list[tuple[str, str, float]], rounds: int = 200, seed: int = 0) -> list[Rating]:
    """Every model that fought, best first: rating, 95% interval, rank, battles, win rate."""
    models = sorted({m for x, y, _s in battles for m in (x, y)})
    if not models:
        return []
    index = {m: i for i, m in enumerate(models)}
    a = np.array([index[x] for x, _y, _s in battles], dtype=int)
    b = np.array([index[y] for _x, y, _s in battles], dtype=int)
    s = np.array([score for _x, _y, score in battles], dtype=float)
    point = _ratings(len(models), a, b, s)
    rng = np.random.default_rng(seed)
    samples = np.empty((rounds, len(models)))
    for r in range(rounds):
        pick = rng.integers(0, len(battles), len(battles))
        samples[r] = _ratings(len(models), a[pick], b[pick], s[pick], start=point)  # warm start: fewer steps
    lower, upper = np.percentile(samples, 2.5, axis=0), np.percentile(samples, 97.5, axis=0)
    counts = np.bincount(a, minlength=len(models)) + np.bincount(b, minlength=len(models))
    wins = np.bincount(a, weights=s, minlength=len(models)) + np.bincount(b, weights=1 - s, minlength=len(models))
    ranks = shared_ranks(lower, upper)
    rows = [Rating(m, float(point[i]), float(lower[i]), float(upper[i]), ranks[i], int(counts[i]), float(wins[i]),
                   float(wins[i] / counts[i])) for i, m in enumerate(models)]
    return sorted(rows, key=lambda row: (-row.rating, row.model))


def shared_ranks(lower, upper) -> list[int]:
    """1 + the number of models whose lower bound is above this one's upper bound."""
    return [1 + sum(1 for lo in lower if lo > up) for up in upper]


def win_matrix(battles: list[tuple[str, str, float]]) -> dict[tuple[str, str], tuple[float, int]]:
    """(row, column) -> (row's win rate against column, battles between them); ties count half."""
    totals: dict[tuple[str, str], list[float]] = {}
    for x, y, score in battles:
        for row, col, won in ((x, y, score), (y, x, 1 - score)):
            cell = totals.setdefault((row, col), [0.0, 0])
            cell[0] += won
            cell[1] += 1
    return {key: (won / n, n) for key, (won, n) in totals.items()}
