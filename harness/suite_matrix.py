"""A finished suite run of any size written straight to the database (real rows, as the app's
models store them; no model runs): what the pass-matrix bench (bench/pass_matrix.py) times and
the pass matrix's browser test (tests/live/test_pass_matrix_browser.py) looks at. Call it inside
a configured Django (the bench's own test database; the live app through `manage.py shell`).

Every answer is a done generation with its stored check results (three checks: the suite's two
defaults and the prompt's own): answer n (prompt-major) fails "mentions refund" when n % 10 == 3
(and "names the window" unless n % 3 == 0), and failed to generate when n % 97 == 5. Prompts carry
two of TAGS each. Each generation has token counts and speeds, so a priced entry's answers cost."""

from __future__ import annotations

TAGS = ("billing", "returns", "shipping", "tone", "legal")
DEFAULT_CHECKS = [{"type": "contains", "value": "refund", "ignore_case": True, "name": "mentions refund"},
                  {"type": "words", "max": 150, "name": "under 150 words"}]


def new_entries(count: int) -> list:
    """`count` catalogue entries of their own (bench-model-<i>), priced per token."""
    from arena.catalogue.models import ModelEntry

    return ModelEntry.objects.bulk_create([
        ModelEntry(slug=f"bench-model-{i}", name=f"Bench model {i}", label=f"Bench {i}", source="package:none",
                   price_input_per_mtok=0.15 * (i + 1), price_output_per_mtok=0.6 * (i + 1))
        for i in range(count)])


def seed(owner, prompts: int, entries: list, name: str = "Bench suite"):
    """A finished run of `owner`'s new suite of `prompts` prompts by `entries` (in order): the run."""
    from django.utils import timezone

    from arena.generations.models import Generation
    from arena.suite_runs.models import SuiteAnswer, SuiteContestant, SuiteRun
    from arena.suites.models import Suite, SuitePrompt

    suite = Suite.objects.create(owner=owner, name=name, default_checks=DEFAULT_CHECKS)
    rows = SuitePrompt.objects.bulk_create([
        SuitePrompt(suite=suite, position=p + 1, prompt=f"Question {p + 1}: can I return an item after {p} days? "
                    + "Please explain the policy in detail. " * 4,
                    reference="Yes, within 30 days for a refund.",
                    tags=sorted({TAGS[p % len(TAGS)], TAGS[(p * 3 + 1) % len(TAGS)]}),
                    checks=[{"type": "regex", "value": r"\b30 days\b", "name": "names the window"}])
        for p in range(prompts)])
    now = timezone.now()
    total = prompts * len(entries)
    run = SuiteRun.objects.create(owner=owner, suite=suite, state=SuiteRun.State.DONE, done=total, total=total,
                                  finished_at=now)
    SuiteContestant.objects.bulk_create([SuiteContestant(run=run, model=m, position=i + 1)
                                         for i, m in enumerate(entries)])
    gens, answers = [], []
    for p, prompt in enumerate(rows):
        for c, model in enumerate(entries):
            n = p * len(entries) + c
            broken = n % 97 == 5
            gen = Generation(owner=owner, model=model, origin=Generation.Origin.SUITE, run_kind="suite_answer",
                             run_id=run.id, prompt=prompt.prompt, params={"temperature": 0.0},
                             status=Generation.Status.FAILED if broken else Generation.Status.DONE,
                             text="" if broken else "Yes: you can return it within 30 days for a refund. "
                             * (1 + n % 5),
                             failure_reason="The worker died mid-stream." if broken else "",
                             prompt_tokens=40, generated_tokens=20 + n % 50, tokens_per_s=30.0 + c,
                             time_to_first_token_s=0.2, finished_at=now)
            gens.append(gen)
            passing = n % 10 != 3
            results = [_result("mentions refund", "contains", passing, 'contains "refund" (any case)',
                               'found "refund"' if passing else 'missing "refund"'),
                       _result("under 150 words", "words", True, "at most 150 words", f"{11 + n % 50} words"),
                       _result("names the window", "regex", passing or n % 3 == 0, r"matches \b30 days\b",
                               "a match" if passing or n % 3 == 0 else "no match")]
            answers.append(SuiteAnswer(
                run=run, prompt=prompt, contestant=model, generation=gen, checks=[] if broken else results,
                passed=None if broken else all(r["passed"] for r in results),
                score=None if broken else sum(r["passed"] for r in results) / len(results),
                checked_at=None if broken else now))
    Generation.objects.bulk_create(gens, batch_size=2000)
    SuiteAnswer.objects.bulk_create(answers, batch_size=2000)
    return run


def _result(name: str, kind: str, passed: bool, expected: str, got: str) -> dict:
    return {"name": name, "type": kind, "passed": passed, "score": 1.0 if passed else 0.0, "weight": 1.0,
            "expected": expected, "got": got, "error": ""}


def seed_for(username: str, prompts: int, contestants: int) -> str:
    """In a running app: a run of `username`'s by its first `contestants` enabled entries (by slug),
    the first priced per token and the second per hour (prices no other page reads); the run's id."""
    from django.contrib.auth import get_user_model

    from arena.catalogue.models import ModelEntry

    entries = list(ModelEntry.objects.enabled().order_by("slug")[:contestants])
    ModelEntry.objects.filter(id=entries[0].id).update(price_input_per_mtok=0.15, price_output_per_mtok=0.6)
    if len(entries) > 1:
        ModelEntry.objects.filter(id=entries[1].id).update(price_per_hour=2.5)
    owner = get_user_model().objects.get(username=username)
    return str(seed(owner, prompts, entries, name="Refund policy checks").id)
