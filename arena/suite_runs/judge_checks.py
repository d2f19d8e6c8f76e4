"""A quick check of a catalogue entry as a judge, before a run trusts it: a few fixed pairs
whose better answer is not in doubt, each read in both orders through the same prompt
(arena.suite_runs.judge.DEFAULT_TEMPLATE), parameters and constrained reply a run's judge gets.

Started from the catalogue (an admin action, `start_check`): the readings are generations of
their own run kind (CHECK_KIND, a judging kind: never counted as the model's results), run by
the generation core's task in the fair line, so the request never waits on the model. Nothing
has to end the check: its readings are read from their generations whenever asked
(`check_readings`), each as arena.leaderboard.reliability reads a run's; with the readings of
the entry's runs (arena.leaderboard.trust) they give what the run form shows of each judge
(`known_judges`). Eight pairs, sixteen readings: enough for a judge that names the answer
shown first every time to be marked unreliable by the rule's intervals (16 of 16: 81% to 100%),
too few to call a judge reliable on their own (that needs MIN_PAIRS pairs)."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.exceptions import NotRegistered
from django.db import transaction

from arena.battles.judging import ORDERS
from arena.catalogue.models import ModelEntry
from arena.generations import runs, services, tasks
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest
from arena.leaderboard import judges, reliability, trust

from . import judge
from .models import JudgeCheck, JudgeCheckReading

CHECK_KIND = "judge_check"
# (question, the better answer, the worse one): a judge that cannot tell these apart, or that
# answers by position, is not one to trust on closer calls.
PAIRS = (
    ("What is 2 + 2?", "2 + 2 = 4.", "2 + 2 = 5."),
    ("What is the capital of France?", "The capital of France is Paris.", "The capital of France is Berlin."),
    ("How many days are there in a week?", "A week has seven days.", "A week has twelve days."),
    ("What colour is a clear daytime sky?", "Blue.", "Green with purple stripes."),
    ("Write the word 'cat' backwards.", "tac", "cat"),
    ("Which number is larger, 10 or 3?", "10 is larger than 3.", "3 is larger than 10."),
    ("At what temperature does water boil at sea level, in Celsius?", "100 °C.", "12 °C."),
    ("Name the planet humans live on.", "Earth.", "The Moon, which is a planet."),
)


def register_run_kind() -> None:
    """SuiteRunsConfig.ready() calls this."""
    runs.register(runs.RunKind(CHECK_KIND, start=tasks.start_run, judging=True))


@transaction.atomic
def start_check(entry, user) -> JudgeCheck:
    """A quick check of `entry` as a judge: every pair's two readings queued (they join the line
    when this commits); nothing here waits on the model."""
    check = JudgeCheck.objects.create(judge=entry, requested_by=user)
    params = entry.params_with_defaults(judge.JUDGE_PARAMS).to_dict()
    for number, (question, better, worse) in enumerate(PAIRS):
        for order in ORDERS:
            first, second = (better, worse) if order == "left_first" else (worse, better)
            prompt = judge.render(judge.DEFAULT_TEMPLATE, question=question, first=first, second=second)
            [gen] = services.start(user, [GenerationRequest(model=entry, prompt=prompt, params=params)],
                                   origin=Generation.Origin.SUITE, kind=CHECK_KIND, run_id=check.id,
                                   check_limits=False)
            JudgeCheckReading.objects.create(judge_check=check, pair=number, order=order, generation=gen)
    return check


def check_readings() -> list[reliability.Reading]:
    """Every quick check's readings, oldest first, one Reading per judge and pair (the better
    answer on the left); a check's pairs are the same pairs each time, so a judge's latest
    check counts. A reading still running is not in yet; one that failed counts as failed."""
    rows = (JudgeCheckReading.objects.select_related("judge_check__judge", "generation")
            .order_by("judge_check__created_at", "pair"))
    orders: dict[tuple[str, int], dict[str, str]] = {}
    for row in rows:
        gen = row.generation
        if gen.status not in Generation.FINISHED:
            continue
        text = gen.text if gen.status == Generation.Status.DONE else ""
        key = (row.judge_check.judge.slug, row.pair)
        orders.setdefault(key, {})[row.order] = judge.verdict_for(row.order, text) if text else ""
    return [reliability.Reading(f"check:{pair}:better", f"check:{pair}:worse", slug,
                                said.get("left_first", ""), said.get("right_first", ""))
            for (slug, pair), said in orders.items()]


def pending(entry_ids) -> dict[int, int]:
    """Entry id -> readings of its quick checks still queued or running."""
    rows = (JudgeCheckReading.objects.filter(judge_check__judge_id__in=list(entry_ids),
                                             generation__status__in=Generation.live_statuses())
            .values_list("judge_check__judge_id", flat=True))
    counts: dict[int, int] = {}
    for entry_id in rows:
        counts[entry_id] = counts.get(entry_id, 0) + 1
    return counts


def known_judges(entries) -> list[dict]:
    """What is known of each of `entries` as a judge, for the run form: its figures and verdict
    over its runs' readings and its quick checks (arena.leaderboard.judges.rows), with how many
    of its quick checks' pairs it judged right; "not checked yet" where it has no reading."""
    check = check_readings()
    report = reliability.reliability(trust.stored_readings() + check, between=False)
    rows = {row["slug"]: row for row in judges.rows(report, {})["judges"]}
    right: dict[str, tuple[int, int]] = {}
    for reading in check:
        if reading.both:
            done, correct = right.get(reading.judge, (0, 0))
            right[reading.judge] = (done + 1, correct + (reading.verdict == reliability.LEFT))
    waiting = pending(entry.id for entry in entries)
    return [{"entry": entry, "row": rows.get(entry.slug), "check": right.get(entry.slug),
             "pending": waiting.get(entry.id, 0)} for entry in entries]


CHECK_STARTED = ("A quick judge check started for {names}: {pairs} pairs, each read in both orders. "
                 "Its figures appear on the new suite run form as its readings come in.")


@admin.action(description="Quick judge check (a few pairs read both ways)")
def quick_judge_check(modeladmin, request, queryset):
    """The catalogue's admin action: a quick check of each chosen entry as a judge."""
    entries = list(queryset)
    for entry in entries:
        start_check(entry, request.user)
    modeladmin.message_user(request, CHECK_STARTED.format(names=", ".join(e.name for e in entries),
                                                          pairs=len(PAIRS)))


def add_admin_action() -> None:
    """The catalogue's admin (arena.catalogue.admin, a layer below: it cannot import this) gets
    the quick check among its actions; SuiteRunsConfig.ready() calls this."""
    try:
        model_admin = admin.site.get_model_admin(ModelEntry)
    except NotRegistered:
        return
    if quick_judge_check not in (model_admin.actions or ()):
        model_admin.actions = [*(model_admin.actions or ()), quick_judge_check]
