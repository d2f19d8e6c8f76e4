"""Ratings and pairings for the formats that choose what to judge from the verdicts so far: the
adaptive format's Bradley–Terry estimate with its uncertainty, and the Swiss format's pairing.
Pure: plain numbers in, plain numbers out (arena.suite_runs.plan puts them to work).

Adaptive. Each contestant has a strength θ; a pair's verdict is a win for the left side with
probability σ(θ_left − θ_right) (σ the logistic function), a tie counts half a win to each side.
`fit` finds the most probable strengths given the verdicts and a normal prior N(0, PRIOR_SD²) on
each (the prior keeps them finite when a contestant has won or lost everything, and pulls a
contestant with few verdicts towards the middle), by Newton's method; the inverse of the
information at the optimum (the Laplace approximation) is the strengths' covariance. For two
contestants the difference d = θ_a − θ_b then has a standard deviation sd, and the probability
that the estimate has them in the wrong order is Φ(−|d| / sd). Two contestants are *separated*
when the 95% interval of their difference excludes 0: |d| ≥ Z·sd, Z = 1.96. `pick` chooses
the pairs to judge next by their expected effect on the ranking's errors: the expected number of
pairs in the wrong order is the sum of those probabilities (Kendall's tau counts exactly these),
and a pair is worth judging by how much its next verdict is expected to lower that sum (a
one-step look-ahead, the "knowledge gradient").

Swiss. `swiss_pairing` pairs contestants of similar scores: the contestants sorted by score
(highest first, ties in seed order), the first still unpaired meets the nearest one below it
it has not met yet, backtracking where that leaves someone without a new opponent; only when
no pairing without a rematch exists (a search of SEARCH_LIMIT steps found none) does it accept
the fewest rematches it can find. With an odd number, the lowest-scored contestant that has not
had a bye sits the round out.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

PRIOR_SD = 1.0
Z = 1.96  # separated: the 95% interval of the difference excludes 0
SEARCH_LIMIT = 20_000
LOOKAHEAD = (1, 4, 16)  # `pick` values a pair by its best gain per verdict over this many more
SCOPE = 3  # `pick` counts the errors of pairs up to 3 places apart: farther ones are almost never wrong
# Gauss–Hermite rule (probabilists', 16 points) for an expectation over a normal: the nodes and
# their weights (the weights sum to 1; past 4.5 sd they weigh nothing here).
_NODES = (0.386760604501, 1.163829100555, 1.951980345716, 2.760245047631, 3.600873624172, 4.49295530252)
_WEIGHTS = (0.286568521238, 0.158338372751, 0.047284752354, 0.007266937601, 0.000525984927, 0.0000153)
HERMITE = tuple((s * z, w) for z, w in zip(_NODES, _WEIGHTS, strict=True) for s in (1, -1))

Tally = Mapping[tuple[int, int], tuple[float, int]]  # (a, b) -> (a's points, verdicts between a and b)


@dataclass(frozen=True)
class Fit:
    """Strengths (logits) and their covariance, contestants in the order given to `fit`."""

    contestants: tuple[int, ...]
    strength: tuple[float, ...]
    cov: tuple[tuple[float, ...], ...]

    def _i(self, contestant: int) -> int:
        return self.contestants.index(contestant)

    def rating(self, contestant: int) -> float:
        return self.strength[self._i(contestant)]

    def diff(self, a: int, b: int) -> tuple[float, float]:
        """θ_a − θ_b and its standard deviation."""
        i, j = self._i(a), self._i(b)
        var = self.cov[i][i] + self.cov[j][j] - 2 * self.cov[i][j]
        return self.strength[i] - self.strength[j], math.sqrt(max(var, 0.0))

    def wrong_order(self, a: int, b: int) -> float:
        """The probability that the estimate has a and b in the wrong order."""
        d, sd = self.diff(a, b)
        return 0.5 if sd == 0 else _wrong(d, sd * sd)

    def separated(self, a: int, b: int) -> bool:
        d, sd = self.diff(a, b)
        return abs(d) >= Z * sd

    def ranking(self) -> list[int]:
        """Strongest first; equal strengths in the order given to `fit`."""
        return [c for _, _, c in sorted((-s, i, c) for i, (c, s) in enumerate(zip(self.contestants, self.strength,
                                                                                    strict=True)))]

    def adjacent(self) -> list[tuple[int, int]]:
        """Neighbours in the ranking, strongest pair first."""
        order = self.ranking()
        return list(itertools.pairwise(order))


def pick(fit: Fit, candidates: list[tuple[int, int]], count: int) -> list[tuple[int, int]]:
    """Up to `count` of `candidates`, one after another, each the pair whose next verdict is
    expected to remove the most errors from the ranking, given those picked before: the sum over
    the pairs up to SCOPE places apart of the fall in their chance of being in the wrong order.
    A verdict between i and j carries the information w = p·(1 − p), p the fitted chance that i
    wins; by Sherman–Morrison it removes v = w·(Σu)_xy² / (1 + w·u'Σu) from the variance of a
    difference θ_x − θ_y (u = e_i − e_j), and before the verdict its new estimate is d + N(0, v)
    (the part of the variance the verdict resolves): `_fall`. One verdict rarely moves
    a pair that is probably in order across 0, so its expected errors barely fall though a few
    verdicts would resolve it: a candidate is valued by its best fall per verdict over m = 1, 4
    or 16 more of them (LOOKAHEAD; information m·w; Frazier and Powell's KG(*) rule). Ties go to
    the earlier candidate; a candidate that would remove nothing is not picked."""
    index = {c: i for i, c in enumerate(fit.contestants)}
    order = [index[c] for c in fit.ranking()]
    near = [(order[r], order[q]) for r in range(len(order)) for q in range(r + 1, min(r + 1 + SCOPE, len(order)))]
    cov = [list(row) for row in fit.cov]
    picked: list[tuple[int, int]] = []
    for _ in range(count):
        targets = [_target(fit, cov, x, y) for x, y in near]
        best, best_gain, best_update = None, 1e-12, None
        for a, b in candidates:
            if (a, b) in picked:
                continue
            i, j = index[a], index[b]
            cu = [row[i] - row[j] for row in cov]  # Σu
            p = 1.0 / (1.0 + math.exp(fit.strength[j] - fit.strength[i]))
            w = p * (1 - p)
            gain = max(_gain(targets, cu, m * w / (1 + m * w * (cu[i] - cu[j]))) / m for m in LOOKAHEAD)
            if gain > best_gain:
                best, best_gain, best_update = (a, b), gain, (cu, w / (1 + w * (cu[i] - cu[j])))
        if best is None or best_update is None:
            break
        picked.append(best)
        cu, scale = best_update
        cov = [[cov[r][c] - scale * cu[r] * cu[c] for c in range(len(cu))] for r in range(len(cu))]
    return picked


@dataclass(frozen=True)
class _Target:
    """A pair whose order `pick` weighs: indices, estimated difference, its variance, P(wrong order)."""

    x: int
    y: int
    d: float
    var: float
    wrong: float


def _target(fit: Fit, cov: list[list[float]], x: int, y: int) -> _Target:
    d, var = fit.strength[x] - fit.strength[y], cov[x][x] + cov[y][y] - 2 * cov[x][y]
    return _Target(x, y, d, var, _wrong(d, var) if var > 0 else 0.0)


def _gain(targets: list[_Target], cu: list[float], scale: float) -> float:
    """The fall in the expected number of `targets` in the wrong order from verdicts that remove
    scale·(Σu)_xy² of each one's variance."""
    gain = 0.0
    for t in targets:
        resolved = scale * (cu[t.x] - cu[t.y]) ** 2
        if t.var > 0 and resolved > 1e-12 * t.var:
            gain += _fall(t.d, t.var, resolved)
    return gain


def _wrong(d: float, var: float) -> float:
    """The chance that the order of an estimated difference d of variance var is wrong: Φ(−|d|/sd)."""
    return 0.5 * math.erfc(abs(d) / math.sqrt(2 * var))


def _fall(d: float, var: float, resolved: float) -> float:
    """How much verdicts resolving `resolved` of `var` are expected (before them) to lower the
    chance of the wrong order: the estimate becomes X = |d| + N(0, resolved), its variance
    left = var − resolved. As E Φ(−X/√left) = Φ(−|d|/√var) exactly (the probability is a
    martingale), the fall is E[Φ(−X/√left) − Φ(−|X|/√left)] = E[erf(−X/√(2·left)); X < 0]: only
    an estimate that crosses 0 lowers it, and it is never negative. Nor is it more than the
    chance itself, where the rule is coarsest (nearly all the variance resolved, erf a step)."""
    left, sd = max(var - resolved, 1e-12 * var), math.sqrt(resolved)
    fall = 0.0
    for z, weight in HERMITE:
        x = abs(d) + z * sd
        if x < 0:
            fall += weight * math.erf(-x / math.sqrt(2 * left))
    return min(fall, _wrong(d, var))


def tally(results: Iterable[tuple[int, int, float]]) -> dict[tuple[int, int], tuple[float, int]]:
    """(a, b, a's score: 1, 0.5 or 0) results summed per pair (a, b as given)."""
    out: dict[tuple[int, int], tuple[float, int]] = {}
    for a, b, score in results:
        points, games = out.get((a, b), (0.0, 0))
        out[(a, b)] = (points + score, games + 1)
    return out


def fit(contestants: list[int], results: Tally, *, prior_sd: float = PRIOR_SD, iterations: int = 100) -> Fit:
    """The most probable strengths given `results` (a `tally`) and the prior, with their covariance.
    Deterministic: the pairs are read in sorted order, whatever order the mapping holds."""
    index = {c: i for i, c in enumerate(contestants)}
    n, precision = len(contestants), 1.0 / prior_sd ** 2
    games = sorted((index[a], index[b], points, count) for (a, b), (points, count) in results.items() if count)
    theta = [0.0] * n
    info: list[list[float]] = []
    for _ in range(iterations):
        grad = [-precision * t for t in theta]
        info = [[precision if i == j else 0.0 for j in range(n)] for i in range(n)]
        for i, j, points, count in games:
            p = 1.0 / (1.0 + math.exp(theta[j] - theta[i]))
            grad[i] += points - count * p
            grad[j] -= points - count * p
            w = count * p * (1 - p)
            info[i][i] += w
            info[j][j] += w
            info[i][j] -= w
            info[j][i] -= w
        step = _solve(info, grad)
        theta = [t + s for t, s in zip(theta, step, strict=True)]
        if max((abs(s) for s in step), default=0.0) < 1e-10:
            break
    cov = _inverse(info) if n else []
    return Fit(tuple(contestants), tuple(theta), tuple(tuple(row) for row in cov))


def _inverse(matrix: list[list[float]]) -> list[list[float]]:
    n = len(matrix)
    return [list(col) for col in zip(*[_solve(matrix, [1.0 if i == k else 0.0 for i in range(n)]) for k in range(n)],
                                     strict=True)]


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float]:
    """x with matrix·x = rhs (Gaussian elimination, partial pivoting; the matrix is positive definite)."""
    n = len(rhs)
    a = [[*row[:], rhs[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            factor = a[r][col] / a[col][col]
            if factor:
                for k in range(col, n + 1):
                    a[r][k] -= factor * a[col][k]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][k] * x[k] for k in range(r + 1, n))) / a[r][r]
    return x


# --- Swiss ---------------------------------------------------------------------------------------
def swiss_rounds(n: int) -> int:
    """How many rounds a Swiss run of `n` contestants plays: ceil(log2 n) + 1."""
    return math.ceil(math.log2(n)) + 1 if n > 1 else 0


def swiss_pairing(contestants: list[int], scores: Mapping[int, float], met: set[frozenset[int]],
                  byes: set[int]) -> tuple[list[tuple[int, int]], int | None]:
    """One round's pairs (each in `contestants` order) and who has the bye (None: nobody); see the
    module's docstring for the rule."""
    position = {c: i for i, c in enumerate(contestants)}
    order = sorted(contestants, key=lambda c: (-scores.get(c, 0.0), position[c]))
    bye = None
    if len(order) % 2:
        bye = next((c for c in reversed(order) if c not in byes), order[-1])
        order.remove(bye)
    best: list[tuple[int, int]] | None = None
    for allowed in range(len(order) // 2 + 1):
        best = _match(order, met, allowed, [SEARCH_LIMIT] if allowed == 0 else [10 * SEARCH_LIMIT])
        if best is not None:
            break
    assert best is not None  # with every rematch allowed, the first partner always does
    return [(a, b) if position[a] < position[b] else (b, a) for a, b in best], bye


def _match(order: list[int], met: set[frozenset[int]], allowed: int, budget: list[int]) -> list | None:
    """Pairs for `order` (first unpaired with the nearest one possible) with at most `allowed`
    rematches, or None (none found within `budget` steps)."""
    if not order:
        return []
    budget[0] -= 1
    if budget[0] < 0:
        return None
    first, rest = order[0], order[1:]
    for k, partner in enumerate(rest):
        rematch = frozenset((first, partner)) in met
        if rematch and not allowed:
            continue
        found = _match(rest[:k] + rest[k + 1:], met, allowed - rematch, budget)
        if found is not None:
            return [(first, partner), *found]
    return None
