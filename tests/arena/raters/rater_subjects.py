"""A finished suite run that people judge (no model judge): three SmolLM2 variants on two
prompts, answers written straight to the database (no model runs), for the rater-link browser
test (tests/live/test_rater_browser.py, through `manage.py shell -c`). The answers never name
their model."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils import timezone

from arena.catalogue.models import ModelEntry
from arena.generations.models import Generation
from arena.suite_runs.models import SuiteAnswer, SuiteContestant, SuiteRun
from arena.suites.models import Suite, SuitePrompt

SLUGS = ["smollm2-135m", "smollm2-135m-awq", "smollm2-135m-llamacpp"]
PROMPTS = {"What is the capital of France?": ["Paris.", "The capital of France is Paris.", "Lyon, I think."],
           "Say hello politely.": ["Hello! How can I help you today?", "hi", "Good day to you."]}


def seed(username: str) -> dict[str, str]:
    owner = get_user_model().objects.get(username=username)
    entries = {m.slug: m for m in ModelEntry.objects.filter(slug__in=SLUGS)}
    contestants = [entries[slug] for slug in SLUGS]
    now = timezone.now()
    suite = Suite.objects.create(owner=owner, name="Support replies")
    steps = len(PROMPTS) * len(contestants)
    run = SuiteRun.objects.create(owner=owner, suite=suite, state=SuiteRun.State.DONE, done=steps, total=steps,
                                  finished_at=now)
    SuiteContestant.objects.bulk_create([SuiteContestant(run=run, model=m, position=i)
                                         for i, m in enumerate(contestants, 1)])
    for position, (text, answers) in enumerate(PROMPTS.items(), 1):
        prompt = SuitePrompt.objects.create(suite=suite, position=position, prompt=text)
        for model, answer in zip(contestants, answers, strict=True):
            gen = Generation.objects.create(
                owner=owner, model=model, prompt=text, params={"max_new_tokens": 32}, origin=Generation.Origin.SUITE,
                status=Generation.Status.DONE, text=answer, finish_reason="stop", prompt_tokens=7, generated_tokens=5,
                time_to_first_token_s=0.2, tokens_per_s=20.0, started_at=now, finished_at=now)
            SuiteAnswer.objects.create(run=run, prompt=prompt, contestant=model, generation=gen)
    return {"run": str(run.id), "names": [m.name for m in contestants] + SLUGS}
