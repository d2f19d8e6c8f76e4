"""Verdicts between the eight default variants and a finished, judged suite run of the four
SmolLM2 variants whose names share their first 20 characters, written straight to the database
(no model runs): what the charts are checked and photographed on, by the test client here and by
the running application in tests/live/test_chart_labels.py (`manage.py shell -c`)."""

from __future__ import annotations

from itertools import combinations

from django.contrib.auth import get_user_model
from django.utils import timezone

from arena.battles.models import Battle
from arena.catalogue.defaults import DEFAULT_ENTRIES
from arena.catalogue.models import ModelEntry
from arena.generations.models import Generation
from arena.suite_runs.models import SuiteAnswer, SuiteContestant, SuiteRun
from arena.suites.models import Suite, SuitePrompt

# The variants that read alike once cut ("SmolLM2 135M Instruct, …"): the run's contestants.
ALIKE = ["smollm2-135m-spec", "smollm2-135m-awq", "smollm2-135m-llamacpp", "smollm2-135m-llamacpp-spec"]
PROMPTS = ["Name a colour.", "Name a city."]


def _answer(owner, model: ModelEntry, prompt: str, rate: float, origin: str = Generation.Origin.WEB) -> Generation:
    """A finished answer at `rate` tokens/s, its first token the sooner the faster it decodes."""
    now = timezone.now()
    return Generation.objects.create(
        owner=owner, model=model, prompt=prompt, params={"max_new_tokens": 8}, origin=origin,
        status=Generation.Status.DONE, text="Blue.", finish_reason="stop", prompt_tokens=7, generated_tokens=3,
        time_to_first_token_s=round(4 / rate, 2), tokens_per_s=rate, started_at=now, finished_at=now)


def seed(username: str | None = None) -> dict[str, str]:
    """The verdicts and the run, owned by `username` (default: the first staff user); the run's id."""
    users = get_user_model().objects
    owner = users.get(username=username) if username else users.filter(is_staff=True).order_by("pk").first()
    entries = {m.slug: m for m in ModelEntry.objects.filter(slug__in=[e["slug"] for e in DEFAULT_ENTRIES])}
    ring = [entries[e["slug"]] for e in DEFAULT_ENTRIES]
    now = timezone.now()
    # Each variant against the next, both ways round: every one rated, with wins and losses.
    for i, left in enumerate(ring):
        right = ring[(i + 1) % len(ring)]
        for k, outcome in enumerate(("left", "right", "left" if i % 3 else "tie")):
            Battle.objects.create(owner=owner, left=_answer(owner, left, "Name a colour.", 10.0 + 7 * i + k),
                                  right=_answer(owner, right, "Name a colour.", 12.0 + 5 * i + k),
                                  outcome=outcome, voted_at=now)

    suite = Suite.objects.create(owner=owner, name="Chart labels")
    prompts = [SuitePrompt.objects.create(suite=suite, position=i, prompt=text) for i, text in enumerate(PROMPTS, 1)]
    contestants = [entries[slug] for slug in ALIKE]
    judge = entries["gemma-3-270m-llamacpp"]
    pairs = list(combinations(range(len(contestants)), 2))
    steps = len(prompts) * (len(contestants) + len(pairs))
    run = SuiteRun.objects.create(owner=owner, suite=suite, judge=judge, state=SuiteRun.State.DONE, done=steps,
                                  total=steps, finished_at=now, judge_template="{question} {answer_a} {answer_b}")
    SuiteContestant.objects.bulk_create([SuiteContestant(run=run, model=m, position=i)
                                         for i, m in enumerate(contestants, 1)])
    for prompt in prompts:
        answers = {}
        for i, model in enumerate(contestants):
            gen = _answer(owner, model, prompt.prompt, 15.0 + 9 * i, origin=Generation.Origin.SUITE)
            SuiteAnswer.objects.create(run=run, prompt=prompt, contestant=model, generation=gen)
            answers[i] = gen
        for a, b in pairs:
            outcome = "left" if (a + b + prompt.position) % 3 else "right"
            Battle.objects.create(owner=owner, mode=Battle.Mode.SUITE, left=answers[a], right=answers[b],
                                  outcome=outcome, voted_at=now, judge=judge, judge_template_version=1,
                                  judgements=[{"order": "left_first", "raw": "A", "verdict": outcome},
                                              {"order": "right_first", "raw": "B", "verdict": outcome}])
    return {"run": str(run.id)}
