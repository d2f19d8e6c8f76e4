"""Bradley–Terry ratings from battle records, with bootstrap confidence intervals and
ranks that share a place where intervals overlap (as LMSYS Chatbot Arena ranks).

Each entry also gets a rank range, the ranks it takes across the bootstrap's resamples
("2nd–4th": arena/leaderboard/uncertainty.py).

Pure: it takes (model_a, model_b, score) triples, score 1 when a won, 0 when b won and
0.5 for a tie (a tie counts as half a win each way), and knows nothing of Django.

The fit is the maximum-likelihood Bradley–Terry model (a logistic model of the rating
difference, solved by Newton's method), with a weak prior: each model also plays one
virtual tie against an average opponent, which keeps ratings finite for a model that
never won (or never lost) and is negligible once a model has a few dozen battles. The
virtual opponent (strength 1) also anchors the scale, which a pure Bradley–Terry fit
leaves free. Ratings are on the Elo scale:
1000 + 400·log10(strength), so the average opponent stands at 1000.

Style control (`style_leaderboard`) is the same fit with covariates: each battle also has a
row of style features (arena/leaderboard/style.py), the logit of "left wins" is the rating
difference plus the features times their coefficients, and the ratings are the model
coefficients of that joint fit: what is left once length and Markdown are accounted for
(LMArena's method). The style coefficients get a very weak Gaussian prior (STYLE_PRIOR) so
the fit stays defined when two features move together.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import uncertainty

BASE, SCALE = 1000.0, 400.0
PRIOR_TIES = 1.0  # virtual ties per model against an average opponent
MAX_ITERATIONS = 100
LN10 = float(np.log(10))
TOLERANCE = 1e-7  # in log-strength: well under a thousandth of a rating point
STYLE_PRIOR = 0.01  # precision of the Gaussian prior on each (standardised) style coefficient


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
    rank_best: int = 0  # the range of ranks it takes across the bootstrap (uncertainty.rank_ranges)
    rank_worst: int = 0

    @property
    def rank_range(self) -> str:
        """The rank range in words: "1st", "2nd–4th"."""
        return uncertainty.rank_words(self.rank_best, self.rank_worst)


@dataclass(frozen=True)
class Coefficient:
    """A style feature's effect on the log-odds of winning, per standard deviation of its
    normalised difference, with its 95% bootstrap interval."""
    feature: str
    value: float
    lower: float
    upper: float


@dataclass(frozen=True)
class StyleFit:
    ratings: list[Rating]  # with style control
    coefficients: list[Coefficient]


def fit(models: list[str], battles: list[tuple[str, str, float]]) -> dict[str, float]:
    """Elo-scale Bradley–Terry ratings of `models` from `battles` (a, b, score of a)."""
    index = {m: i for i, m in enumerate(models)}
    a = np.array([index[x] for x, _y, _s in battles], dtype=int)
    b = np.array([index[y] for _x, y, _s in battles], dtype=int)
    s = np.array([score for _x, _y, score in battles], dtype=float)
    return dict(zip(models, _ratings(len(models), a, b, s), strict=False))


def _ratings(n: int, a: np.ndarray, b: np.ndarray, s: np.ndarray, start: np.ndarray | None = None) -> np.ndarray:
    """Elo-scale ratings of the plain fit (no covariates)."""
    return _fit(n, a, b, s, np.zeros((len(s), 0)), start)[0]


def _fit(n: int, a: np.ndarray, b: np.ndarray, s: np.ndarray, x: np.ndarray,
         start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Newton's method on the log-posterior in θ = ln(strength) and the covariates' β: a few
    steps to convergence (the priors make it strictly concave, so every step is well defined).
    Returns (Elo-scale ratings, β)."""
    k = x.shape[1]
    theta = np.zeros(n) if start is None else (start - BASE) / SCALE * LN10
    beta = np.zeros(k)
    for _ in range(MAX_ITERATIONS):
        p = 1 / (1 + np.exp(theta[b] - theta[a] - x @ beta))  # P(a beats b)
        q = 1 / (1 + np.exp(-theta))  # P(beating the virtual opponent)
        residual, weight = s - p, p * (1 - p)
        gradient = np.concatenate([
            np.bincount(a, weights=residual, minlength=n) - np.bincount(b, weights=residual, minlength=n)
            + PRIOR_TIES * (0.5 - q),
            x.T @ residual - STYLE_PRIOR * beta])
        hessian = np.zeros((n + k, n + k))
        pairs = np.bincount(a * n + b, weights=weight, minlength=n * n).reshape(n, n)  # (bincount: fast sums)
        hessian[:n, :n] = pairs + pairs.T + np.diag(-PRIOR_TIES * q * (1 - q) - np.bincount(
            a, weights=weight, minlength=n) - np.bincount(b, weights=weight, minlength=n))
        cross = weight[:, None] * x  # d²/dθ_a dβ = -w·x, d²/dθ_b dβ = +w·x
        for j in range(k):
            hessian[:n, n + j] = (np.bincount(b, weights=cross[:, j], minlength=n)
                                  - np.bincount(a, weights=cross[:, j], minlength=n))
        hessian[n:, :n] = hessian[:n, n:].T
        hessian[n:, n:] = -(x.T * weight) @ x - STYLE_PRIOR * np.eye(k)
        step = np.linalg.solve(hessian, gradient)
        theta -= step[:n]
        beta -= step[n:]
        if np.max(np.abs(step)) < TOLERANCE:
            break
    return BASE + SCALE * theta / LN10, beta


def leaderboard(battles: list[tuple[str, str, float]], rounds: int = 200, seed: int = 0) -> list[Rating]:
    """Every model that fought, best first: rating, 95% interval, rank, battles, win rate."""
    return _table(battles, np.zeros((len(battles), 0)), rounds, seed)[0]


def style_leaderboard(battles: list[tuple[str, str, float]], features: np.ndarray, names: list[str],
                      rounds: int = 200, seed: int = 0) -> StyleFit:
    """The leaderboard with style control: `features` holds one row per battle (style.design_matrix),
    its columns named by `names`. Intervals by the same bootstrap, over battles with their rows."""
    rows, beta, lower, upper = _table(battles, features, rounds, seed)
    coefficients = [Coefficient(name, float(beta[j]), float(lower[j]), float(upper[j]))
                    for j, name in enumerate(names)]
    return StyleFit(rows, coefficients)


def _table(battles, x: np.ndarray, rounds: int, seed: int):
    """(rows best first, β, β's 2.5% and 97.5% bootstrap percentiles)."""
    models = sorted({m for x_, y, _s in battles for m in (x_, y)})
    k = x.shape[1]
    if not models:
        return [], np.zeros(k), np.zeros(k), np.zeros(k)
    index = {m: i for i, m in enumerate(models)}
    a = np.array([index[x_] for x_, _y, _s in battles], dtype=int)
    b = np.array([index[y] for _x, y, _s in battles], dtype=int)
    s = np.array([score for _x, _y, score in battles], dtype=float)
    point, beta = _fit(len(models), a, b, s, x)
    rng = np.random.default_rng(seed)
    samples, beta_samples = np.empty((rounds, len(models))), np.empty((rounds, k))
    for r in range(rounds):
        pick = rng.integers(0, len(battles), len(battles))
        samples[r], beta_samples[r] = _fit(len(models), a[pick], b[pick], s[pick], x[pick], start=point)  # warm start
    lower, upper = np.percentile(samples, 2.5, axis=0), np.percentile(samples, 97.5, axis=0)
    counts = np.bincount(a, minlength=len(models)) + np.bincount(b, minlength=len(models))
    wins = np.bincount(a, weights=s, minlength=len(models)) + np.bincount(b, weights=1 - s, minlength=len(models))
    ranks = shared_ranks(lower, upper)
    ranges = uncertainty.rank_ranges(samples, point)
    rows = [Rating(m, float(point[i]), float(lower[i]), float(upper[i]), ranks[i], int(counts[i]), float(wins[i]),
                   float(wins[i] / counts[i]), *ranges[i]) for i, m in enumerate(models)]
    return (sorted(rows, key=lambda row: (-row.rating, row.model)), beta,
            np.percentile(beta_samples, 2.5, axis=0), np.percentile(beta_samples, 97.5, axis=0))


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
    return {key: (won / n, int(n)) for key, (won, n) in totals.items()}
