"""Issue 35: a speed measured while other answers shared the worker is not the model's speed alone
(SmolLM2 on llama.cpp: 20 tok/s in a suite run, 54–83 alone). The charts take the answers that ran
alone where an entry has any, and say "mixed" where it has none."""

import pytest
from django.template.loader import render_to_string

from arena.generations.models import Generation
from arena.leaderboard import frontier, measures
from arena.playground import fragments

pytestmark = pytest.mark.django_db


def answered(owner, model, rate: float, shared_with: int | None) -> Generation:
    """A finished answer as its run stores the worker's metrics (None: a worker from before the count)."""
    gen = Generation.objects.create(owner=owner, model=model, prompt="Hi", params={"max_new_tokens": 8})
    metrics = {"generated_tokens": 8, "decode_tokens_per_s": rate}
    if shared_with is not None:
        metrics |= {"shared_with_max": shared_with, "shared_with_mean": shared_with / 2}
    assert gen.finish(Generation.Status.DONE, text="Blue.", finish_reason="stop", metrics=metrics)
    return gen


def test_speeds_use_the_answers_that_ran_alone_and_say_mixed_where_none_did(owner, catalogue):
    alone_too, only_shared, before = catalogue[0], catalogue[3], catalogue[1]
    for rate, shared in ((60.0, 0), (80.0, 0), (20.0, 3), (21.0, 3), (22.0, 2)):
        answered(owner, alone_too, rate, shared)
    answered(owner, only_shared, 20.5, 1)
    answered(owner, only_shared, 19.5, 4)
    answered(owner, before, 33.0, None)
    assert measures.speeds() == {alone_too.slug: (70.0, False), only_shared.slug: (20.0, True),
                                 before.slug: (33.0, False)}
    assert measures.median_speeds()[alone_too.slug] == 70.0  # not 22, the median over all five

    ratings = {alone_too.slug: 1010.0, only_shared.slug: 990.0, before.slug: 1000.0}
    (speed, *_rest) = frontier.charts(measures.points(owner, ratings, {}))
    html = render_to_string("leaderboard/_frontier.html", {"chart": speed})
    rows = {slug: html.split(f'data-entry="{slug}"')[1].split("</tr>")[0] for slug in ratings}
    assert "data-mixed" in rows[only_shared.slug] and "shared the worker" in rows[only_shared.slug]
    assert "data-mixed" not in rows[alone_too.slug] and "data-mixed" not in rows[before.slug]


def test_the_metrics_panel_says_how_many_other_answers_shared_the_worker(owner, catalogue):
    shared = fragments.stored(answered(owner, catalogue[0], 20.0, 3))
    assert 'data-metric="shared"' in shared and "measured while 3 other answers shared the worker" in shared
    one = fragments.stored(answered(owner, catalogue[0], 20.0, 1))
    assert "measured while 1 other answer shared the worker" in one
    for alone in (answered(owner, catalogue[0], 60.0, 0), answered(owner, catalogue[0], 60.0, None)):
        assert 'data-metric="shared"' not in fragments.stored(alone)
