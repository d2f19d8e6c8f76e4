"""A model judge's replies are never counted as that model's results (issue 35): its constrained
verdicts are not in the structured-output table, its decode speeds not in the speed figures, and
its replies not in History's lists. The judge's replies come from a real suite run (the runner's
own code paths, tests/arena/suite_runs/running.run_to_end)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from arena.generations.models import Generation
from arena.leaderboard import measures, validity
from arena.suite_runs.actions import start_run
from tests.arena.factories import generation, suite
from tests.arena.suite_runs.running import run_to_end

pytestmark = pytest.mark.django_db


@pytest.fixture
def judged(owner, catalogue):
    """A finished run judged by catalogue[2], which answers nothing else; each of its replies a
    constrained verdict (checked against the judge's schema, as every constrained answer is)."""
    run = start_run(owner, suite=suite(owner, "Capital of France?", "Capital of Peru?"), contestants=catalogue[:2],
                    judge_model=catalogue[2])
    run_to_end(run, verdict="A")
    judge = catalogue[2]
    replies = Generation.objects.filter(model=judge)
    # Constrained replies: each has a validity (no reason given: not valid), and a measured speed.
    assert replies.count() == 4 and all(g.output_valid is False and g.tokens_per_s for g in replies)
    return judge


def test_judge_replies_are_not_in_the_structured_output_table(judged):
    assert judged.slug not in {row["model"] for row in validity.rates()}


def test_a_judges_own_constrained_answers_still_count(owner, judged):
    # The same model answering a prompt with a schema of its own: that is its result.
    gen = generation(owner, judged, "Say yes.", params={"temperature": 0.0, "max_new_tokens": 8,
                                                      "json_schema": {"type": "string"}}, text='"yes"')
    assert gen.output_valid is True
    [row] = [r for r in validity.rates() if r["model"] == judged.slug]
    assert (row["valid"], row["total"]) == (1, 1)


def test_judge_replies_are_not_in_the_speeds(owner, judged):
    assert judged.slug not in measures.median_speeds() and judged.slug not in measures.median_first_tokens()
    generation(owner, judged, "Name a colour.", text="Blue.")
    assert measures.median_speeds()[judged.slug] == pytest.approx(12.5)


def test_judge_replies_are_not_in_history(client, owner, judged):
    client.force_login(owner)
    page = client.get(reverse("history")).content.decode()
    assert "Reply with a JSON object" not in page  # the judge's prompt (arena.suite_runs.judge)
