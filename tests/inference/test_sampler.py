"""`TokenSampler`: the next token of many rows at once, each as it would be alone.

Pure tensor tests (no model): logits made up so that some rows are peaked, some are
flat enough that the nucleus reaches beyond the top NUCLEUS_FAST_K (the full sort).
"""

import pytest
import torch

from inference.engine import NUCLEUS_FAST_K, TokenSampler, make_token_picker, nucleus
from inference.protocol import SamplingParams

VOCAB = 4 * NUCLEUS_FAST_K
CPU = torch.device("cpu")


def made_up_logits(steps: int, rows: int, seed: int = 0) -> torch.Tensor:
    """[steps, rows, vocab]; odd rows nearly flat, even rows peaked."""
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn((steps, rows, VOCAB), generator=generator)
    logits[:, 0::2] *= 6.0
    logits[:, 1::2] *= 0.05
    return logits


PARAMS = [
    SamplingParams(temperature=1.0, top_p=0.9, seed=1),
    SamplingParams(temperature=0.8, top_p=0.95, seed=2),  # flat: the full sort
    SamplingParams(temperature=0.0),
    SamplingParams(temperature=1.2, top_p=1.0, seed=3),
    SamplingParams(temperature=0.5, top_p=0.3, seed=4),
    SamplingParams(temperature=1.0, top_p=1.0, seed=5),
]


def test_each_row_of_a_batch_picks_what_it_picks_alone():
    """One sampler over six different rows against six one-row pickers (Engine.stream's),
    step after step: a row's draws depend on its own seed and logits only."""
    logits = made_up_logits(12, len(PARAMS))
    batch = TokenSampler(PARAMS, CPU)
    alone = [make_token_picker(params, CPU) for params in PARAMS]
    for step in logits:
        assert batch.pick(step) == [pick(row) for pick, row in zip(alone, step, strict=True)]


def test_a_row_draws_the_same_whatever_batch_it_is_in():
    """The same seeded row first beside five others, then beside one other: the same tokens."""
    logits = made_up_logits(8, len(PARAMS), seed=3)
    six = TokenSampler(PARAMS, CPU)
    two = TokenSampler([PARAMS[2], PARAMS[0]], CPU)
    for step in logits:
        assert six.pick(step)[0] == two.pick(step[[2, 0]])[1]


def test_sampled_tokens_stay_in_the_nucleus():
    logits = made_up_logits(40, len(PARAMS), seed=5)
    sampler = TokenSampler(PARAMS, CPU)
    for step in logits:
        for params, row, token in zip(PARAMS, step, sampler.pick(step), strict=True):
            if params.greedy:
                assert token == int(torch.argmax(row))
                continue
            probs = torch.softmax(row / params.temperature, dim=-1)
            kept, ids = nucleus(probs, params.top_p)
            assert token in set(ids[kept > 0].tolist())


@pytest.mark.parametrize("top_p", [1.0, 0.8])
def test_draws_follow_the_distribution(top_p):
    """Inverse-CDF draws over many tokens: frequencies within a few standard errors of the
    (nucleus-renormalised) probabilities."""
    probs = torch.tensor([0.4, 0.25, 0.15, 0.1, 0.06, 0.04])
    params = SamplingParams(temperature=1.0, top_p=top_p, seed=9)
    sampler = TokenSampler([params], CPU)
    logits = torch.log(probs).unsqueeze(0)
    draws = 6000
    counts = torch.bincount(torch.tensor([sampler.pick(logits)[0] for _ in range(draws)]), minlength=6).float()
    kept, ids = nucleus(probs, top_p)
    expected = torch.zeros(6).index_copy_(0, ids, kept / kept.sum())
    tolerance = 4 * torch.sqrt(expected * (1 - expected) / draws) + 1e-9
    assert torch.all((counts / draws - expected).abs() <= tolerance), (counts / draws, expected)


def test_greedy_rows_alone_read_the_argmax():
    logits = made_up_logits(1, 3)[0]
    sampler = TokenSampler([SamplingParams(temperature=0.0)] * 3, CPU)
    assert not sampler.samples
    assert sampler.pick(logits) == torch.argmax(logits, dim=-1).tolist()
