"""Style control: Markdown counts, the style covariates, and the joint Bradley–Terry fit checked
against an independent computation (plain gradient ascent on the same log-posterior, written
here from the formula, sharing no code with arena.leaderboard.ratings' Newton solver)."""

import math
import random

import numpy as np
import pytest

from arena.leaderboard.ratings import PRIOR_PRECISION, STYLE_PRIOR, leaderboard, style_leaderboard
from arena.leaderboard.style import FEATURES, answer_style, design_matrix, element_counts, normalised_difference


def test_markdown_elements_are_counted_outside_code_blocks():
    text = ("# Title\n\n## Part\n\n- a **b**\n- c\n1. d\n2) e\n\n"
            "```\n**not bold**\n# not a header\n- no\n```\n#not-a-header __bold__")
    assert element_counts(text) == {"headers": 2, "list_items": 4, "bold": 2}
    assert element_counts("~~~\n# open fence to the end\n") == {"headers": 0, "list_items": 0, "bold": 0}
    assert element_counts("2 ** 3 ** 4, and -1 is not a list") == {"headers": 0, "list_items": 0, "bold": 0}
    assert element_counts("") == {"headers": 0, "list_items": 0, "bold": 0}
    assert answer_style("Plain.", 12) == {"length": 12, "headers": 0, "list_items": 0, "bold": 0}


def test_covariates_are_standardised_normalised_differences():
    assert normalised_difference(30, 10) == 0.5 and normalised_difference(0, 0) == 0.0
    plain = {"length": 10, "headers": 0, "list_items": 0, "bold": 0}
    long = {"length": 30, "headers": 0, "list_items": 2, "bold": 0}
    x = design_matrix([(long, plain), (plain, long), (plain, plain)])
    raw_length = np.array([0.5, -0.5, 0.0])
    assert x[:, 0] == pytest.approx((raw_length - raw_length.mean()) / raw_length.std())
    assert x[:, 1].tolist() == [0.0, 0.0, 0.0]  # never varies: no signal, no division by zero
    assert x.shape == (3, len(FEATURES)) and design_matrix([]).shape == (0, len(FEATURES))


def independent_fit(battles, x, steps=200000, lr=0.5):
    """Gradient ascent on: Σ [s log p + (1-s) log(1-p)], p = σ(θa - θb + x·β),
    plus a normal prior on each θ and a Gaussian prior on β."""
    models = sorted({m for a, b, _s in battles for m in (a, b)})
    idx = {m: i for i, m in enumerate(models)}
    a = np.array([idx[m] for m, _b, _s in battles])
    b = np.array([idx[m] for _a, m, _s in battles])
    s = np.array([score for _a, _b, score in battles])
    theta, beta = np.zeros(len(models)), np.zeros(x.shape[1])
    for _ in range(steps):
        residual = s - 1 / (1 + np.exp(-(theta[a] - theta[b] + x @ beta)))
        grad_theta = -PRIOR_PRECISION * theta
        np.add.at(grad_theta, a, residual)
        np.add.at(grad_theta, b, -residual)
        grad_beta = x.T @ residual - STYLE_PRIOR * beta
        if max(np.max(np.abs(grad_theta)), np.max(np.abs(grad_beta))) < 1e-8:
            break
        theta += lr * grad_theta / len(battles) * len(models)
        beta += lr * grad_beta / len(battles)
    else:
        raise AssertionError("gradient ascent did not converge")
    return {m: 1000 + 400 * theta[idx[m]] / math.log(10) for m in models}, beta


def verbose_battles(n: int, seed: int):
    """Three equally good models; "verbose" writes longer answers, and the judge prefers the
    longer answer (the outcome depends on length alone). Some answers use Markdown at random."""
    rng = random.Random(seed)
    models, pairs, battles = ["verbose", "terse", "middle"], [], []
    length = {"verbose": (150, 400), "terse": (30, 160), "middle": (30, 160)}
    for _ in range(n):
        a, b = rng.sample(models, 2)
        styles = [{"length": rng.randint(*length[m]), "headers": rng.randint(0, 2), "list_items": rng.randint(0, 4),
                   "bold": rng.randint(0, 3)} for m in (a, b)]
        p_a = 1 / (1 + math.exp(-4 * normalised_difference(styles[0]["length"], styles[1]["length"])))
        battles.append((a, b, float(rng.random() < p_a)))
        pairs.append((styles[0], styles[1]))
    return battles, design_matrix(pairs)


def test_the_style_controlled_fit_agrees_with_an_independent_computation():
    battles, x = verbose_battles(240, seed=4)
    battles[:20] = [(a, b, 0.5) for a, b, _s in battles[:20]]  # ties count half each way here too
    fit = style_leaderboard(battles, x, list(FEATURES), rounds=5)
    ratings, beta = independent_fit(battles, x)
    for row in fit.ratings:
        assert row.rating == pytest.approx(ratings[row.model], abs=1e-3)
    for coefficient, value in zip(fit.coefficients, beta, strict=True):
        assert coefficient.value == pytest.approx(value, abs=1e-6)
    assert [c.feature for c in fit.coefficients] == list(FEATURES)


def test_a_model_that_wins_only_by_writing_longer_loses_its_lead_under_style_control():
    battles, x = verbose_battles(1500, seed=7)
    plain = {r.model: r.rating for r in leaderboard(battles, rounds=20)}
    fit = style_leaderboard(battles, x, list(FEATURES), rounds=20)
    controlled = {r.model: r.rating for r in fit.ratings}
    lead = plain["verbose"] - max(plain["terse"], plain["middle"])
    controlled_lead = controlled["verbose"] - max(controlled["terse"], controlled["middle"])
    assert lead > 100  # its longer answers win it a large lead...
    assert abs(controlled_lead) < 35 and abs(controlled_lead) < lead / 4  # ...that style control removes
    length = fit.coefficients[0]
    assert length.feature == "length" and length.lower <= length.value <= length.upper and length.lower > 0.5
    for markdown in fit.coefficients[1:]:  # the outcome never depended on Markdown
        assert abs(markdown.value) < 0.2


def test_no_battles_no_rows():
    fit = style_leaderboard([], np.zeros((0, len(FEATURES))), list(FEATURES))
    assert fit.ratings == [] and [c.value for c in fit.coefficients] == [0.0] * len(FEATURES)
