"""One token limit on every answer of a suite run (arena/battles/fair.py): contestants whose
catalogue defaults differ (128 and 256 tokens, a stop sequence on one) answer every prompt under
the run's own limit, else ARENA_BLIND_MAX_NEW_TOKENS, with no stop sequence of one side's own; the
run stores the limit and its page says it."""

from __future__ import annotations

import pytest

from arena.suite_runs.actions import start_run
from arena.suite_runs.models import SuiteAnswer
from tests.arena.factories import suite
from tests.arena.suite_runs.running import run_to_end

pytestmark = pytest.mark.django_db


@pytest.fixture
def unequal(three):
    """Two contestants whose own defaults would cut their answers at different lengths."""
    first, second = three[:2]
    first.default_params = {"temperature": 0.7, "max_new_tokens": 128, "stop": ["\n\n"]}
    second.default_params = {"temperature": 0.7, "max_new_tokens": 256}
    first.save(update_fields=["default_params"])
    second.save(update_fields=["default_params"])
    return [first, second]


def answer_params(run) -> list[dict]:
    return [a.generation.params for a in SuiteAnswer.objects.filter(run=run).select_related("generation")]


def test_contestants_whose_defaults_differ_answer_under_the_one_default_limit(owner, unequal, settings):
    settings.ARENA_BLIND_MAX_NEW_TOKENS = 77
    run = start_run(owner, suite=suite(owner, "Name a colour.", "Name a river."), contestants=unequal)
    run_to_end(run)
    params = answer_params(run)
    assert len(params) == 4  # two prompts, two contestants
    assert {p["max_new_tokens"] for p in params} == {77}
    assert all(p["stop"] == [] for p in params)  # the first contestant's own stop sequence is not the run's
    run.refresh_from_db()
    assert run.params["max_new_tokens"] == 77


def test_the_runs_own_limit_binds_every_answer_and_the_page_says_it(client, owner, unequal):
    run = start_run(owner, suite=suite(owner, "Name a colour."), contestants=unequal, params={"max_new_tokens": 40})
    run_to_end(run)
    assert {p["max_new_tokens"] for p in answer_params(run)} == {40}
    client.force_login(owner)
    html = client.get(run.get_absolute_url()).content.decode()
    assert '<span id="run-limit">every answer limited to 40 tokens</span>' in html
