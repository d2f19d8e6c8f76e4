"""Suite runs: contestants (catalogue entries) x a suite's prompts, each pair of answers judged
by a model or blind by people. The tables keep the names they had in the suites app
(Meta.db_table), which held these models before."""

from __future__ import annotations

import uuid
from itertools import combinations
from typing import NamedTuple

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from arena.generations.models import Generation
from arena.suites.models import Suite, SuitePrompt

from . import plan
from .plan import MAX_ATTEMPTS


class SuiteRun(models.Model):
    """Contestants (1 to 16 catalogue entries) x a suite's prompts, judged by a model or by people
    (two or more), each answer checked against the suite's checks.

    A run is carried out by arena.suite_runs.runner, one step at a time, from what the database
    holds (arena.suite_runs.plan): it survives a restart, and nothing that finished runs again."""

    class Format(models.TextChoices):
        ROUND_ROBIN = "round_robin", "Round robin: every pair on every prompt"
        KNOCKOUT = "knockout", "Knockout: a bracket per prompt"
        ADAPTIVE = "adaptive", "Adaptive: the pairs the ranking is least sure of, within a budget of judge calls"
        SWISS = "swiss", "Swiss: rounds pairing similar scores (8 or more contestants)"

    class State(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        CANCELLED = "cancelled"

    MIN_CONTESTANTS, MAX_CONTESTANTS = 1, 16  # one: checks only (a CI gate of one model), no pairs
    MIN_SWISS = 8  # fewer, and a Swiss run is hardly shorter than a round robin

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="suite_runs")
    team = models.ForeignKey("teams.Team", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                             help_text="The team it was made in: its members see it (arena/access.py).")
    suite = models.ForeignKey(Suite, on_delete=models.PROTECT, related_name="runs")
    # The suite's version when the run started: its prompts are the run's, whatever is imported later.
    suite_version = models.PositiveIntegerField(default=1)
    format = models.CharField(max_length=12, choices=Format.choices, default=Format.ROUND_ROBIN)
    judge = models.ForeignKey("catalogue.ModelEntry", null=True, blank=True, on_delete=models.PROTECT,
                              related_name="suite_runs_judged", help_text="Empty: people judge the pairs. The "
                              "first judge of a jury (SuiteRunJudge names the others).")
    judge_template = models.TextField(blank=True, help_text="The judge's prompt (arena.suite_runs.judge).")
    params = models.JSONField(default=dict, blank=True,
                              help_text="Shared sampling parameters, over each contestant's defaults.")
    state = models.CharField(max_length=10, choices=State.choices, default=State.RUNNING, db_index=True)
    seed = models.PositiveIntegerField(default=0, help_text="A knockout's coin for tied pairs, a Swiss run's "
                                       "prompts, an adaptive run's order of prompts.")
    budget = models.PositiveIntegerField(null=True, blank=True,
                                         help_text="Adaptive: judge calls at most (empty: half a round robin's).")
    reuse_answers = models.BooleanField(
        default=False, db_default=False, help_text="Answers of identical deterministic requests are taken from "
        "the owner's earlier runs (arena/generations/cache.py); within the run they always are.")
    # db_default: a row written without the column (code from before it) still inserts
    stop_reason = models.CharField(max_length=12, blank=True, default="", db_default="",
                                   choices=list(plan.STOP_REASONS.items()),
                                   help_text="Adaptive: why it stopped choosing pairs.")
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    stepped_at = models.DateTimeField(default=timezone.now, help_text="When the runner last took a step.")
    chain = models.CharField(max_length=16, blank=True, help_text="The token of the runner's current chain of steps.")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "suites_suiterun"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.suite.name}: {self.get_format_display()}"

    def get_absolute_url(self) -> str:
        return reverse("suite-run-detail", args=[self.id])

    def prompts(self):
        """The prompts this run runs: its suite's version's, in order."""
        return self.suite.prompts_of(self.suite_version)

    @property
    def live(self) -> bool:
        return self.state == self.State.RUNNING

    def verdicts(self):
        """The model judge's verdicts on this run's pairs (battles of its stored answers)."""
        from arena.battles.models import Battle

        answers = SuiteAnswer.objects.filter(run=self).values("generation_id")
        return Battle.objects.filter(mode=Battle.Mode.SUITE, judge__isnull=False, judge_id=self.judge_id,
                                     left_id__in=answers)

    def results(self) -> list[dict]:
        """Per contestant, in order: wins, losses, ties (the judge's verdicts), answers done and
        failed for good, and how many constrained answers followed their schema or regex
        (`validity_rate`, None without any)."""
        rows = list(_tally(self).values())
        for row in rows:
            row["validity_rate"] = row["valid"] / row["constrained"] if row["constrained"] else None
        return rows

    @property
    def eta_s(self) -> float | None:
        """About how long the rest will take, at the pace so far (None before any progress)."""
        if not self.live or not self.done or self.total <= self.done:
            return None
        elapsed = (timezone.now() - self.created_at).total_seconds()
        return elapsed / self.done * (self.total - self.done)

    @property
    def adaptive(self) -> bool:
        return self.format == self.Format.ADAPTIVE

    @property
    def call_budget(self) -> int:
        """Adaptive: the judge calls it may make (its own budget, or half a round robin's)."""
        if self.budget is not None:
            return self.budget
        return plan.default_budget(self.entrants.count(), self.prompts().count(), max(1, len(self.judges)))

    @property
    def judge_calls(self) -> int:
        """Judge calls made so far (every try of every reading)."""
        return self.judgements.aggregate(calls=models.Sum("attempts"))["calls"] or 0

    @property
    def judges(self) -> list:
        """The run's judges in order (catalogue entries): its judge, then its jury's others;
        empty when people judge. Each reads every judged pair in both orders
        (arena.battles.judging: the pair's verdict is their majority)."""
        if self.judge is None:
            return []
        others = [seat.model for seat in self.jury.select_related("model").order_by("position")]
        return [self.judge, *others]

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 0

    @property
    def contestants(self) -> list:
        """The contestants' catalogue entries, in their order (a knockout's seeding)."""
        return [entrant.model for entrant in self.entrants.select_related("model").order_by("position")]

    # --- people judging, blind (arena.suite_runs.views.run_judge) ---------------------------------
    @property
    def people_follow_judge(self) -> bool:
        """People judge the pairs the model judge judged (a knockout's bracket, the pairs an adaptive
        or a Swiss run chose); else every pair."""
        return self.format != self.Format.ROUND_ROBIN and self.judge_id is not None

    def people_pairs(self) -> list[Pair]:
        """The pairs people may judge now, both answers done, in prompt then contestant order: a
        round robin's every pair on every prompt (also a judgeless knockout's, which has no
        bracket to follow), or the pairs a knockout's judge judged."""
        answers = SuiteAnswer.objects.filter(run=self, generation__status="done").select_related(
            "prompt", "generation__model")
        by_key = {(a.prompt_id, a.contestant_id): a for a in answers}
        if self.people_follow_judge:
            wanted = [(a.prompt, a.generation, right) for a, right in self._judged_pairs(answers)]
        else:
            order = [m.id for m in self.contestants]
            wanted = [(by_key[(p.id, a)].prompt, by_key[(p.id, a)].generation, by_key[(p.id, b)].generation)
                      for p in self.prompts() for a, b in combinations(order, 2)
                      if (p.id, a) in by_key and (p.id, b) in by_key]
        return [Pair(prompt, left, right) for prompt, left, right in wanted]

    def _judged_pairs(self, answers) -> list:
        by_gen = {a.generation_id: a for a in answers}
        rows = self.verdicts().order_by("created_at").values_list("left_id", "right_id")
        return [(by_gen[left], by_gen[right].generation) for left, right in rows
                if left in by_gen and right in by_gen]

    def people_verdicts(self, user):
        """`user`'s own blind verdicts on this run's pairs (battles of its stored answers)."""
        from arena.battles.models import Battle

        answers = SuiteAnswer.objects.filter(run=self).values("generation_id")
        return Battle.objects.filter(mode=Battle.Mode.SUITE, judge__isnull=True, owner=user, left_id__in=answers,
                                     rater_verdict__isnull=True)  # a rater link's are its own (RaterVerdict)

    def revealed_to(self, user) -> bool:
        """`user` has seen the names behind their verdicts: their judging of this run is over (the
        same answers come again in other pairs, so nothing after it would be blind)."""
        return self.people_verdicts(user).filter(revealed=True).exists()

    def next_pair_for(self, user) -> Pair | None:
        """The first pair ready to judge that `user` has not judged yet (None: none now, or the
        names were revealed to them)."""
        if self.revealed_to(user):
            return None
        judged = set(self.people_verdicts(user).values_list("left_id", "right_id"))
        return next((pair for pair in self.people_pairs() if (pair.left.id, pair.right.id) not in judged), None)


class RaterVerdict(models.Model):
    """Whose a person's verdict on a run's pair is when a rater link gave it (arena.raters): the
    link, and its name then. The verdict itself is the suite battle (owned by the run's owner,
    blind), so it counts as people's verdicts do; the owner's own verdicts have no such row."""

    battle = models.OneToOneField("battles.Battle", primary_key=True, on_delete=models.CASCADE,
                                  related_name="rater_verdict")
    run = models.ForeignKey(SuiteRun, on_delete=models.CASCADE, related_name="rater_verdicts")
    rater = models.ForeignKey("raters.RaterLink", on_delete=models.CASCADE, related_name="verdicts")
    rater_name = models.CharField(max_length=80, help_text="The rater link's name when the verdict was given.")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.rater_name}'s verdict {self.battle_id}"

    @staticmethod
    def name_on(battle) -> str | None:
        """The rater link's name when one gave this verdict, else None (select_related it)."""
        verdict = getattr(battle, "rater_verdict", None)  # the reverse one-to-one raises when there is none
        return verdict.rater_name if verdict is not None else None


class Pair(NamedTuple):
    """Two answers to one prompt of a run, in the pair's stored left/right order."""

    prompt: SuitePrompt
    left: Generation
    right: Generation


class VerdictError(Exception):
    """A person's verdict that cannot be stored; the message is fit for the user."""


class SuiteContestant(models.Model):
    run = models.ForeignKey(SuiteRun, on_delete=models.CASCADE, related_name="entrants")
    model = models.ForeignKey("catalogue.ModelEntry", on_delete=models.PROTECT, related_name="suite_entries")
    position = models.PositiveSmallIntegerField()

    class Meta:
        db_table = "suites_suitecontestant"
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "model"], name="suite_contestant_once"),
                       models.UniqueConstraint(fields=["run", "position"], name="suite_contestant_position")]

    def __str__(self) -> str:
        return f"contestant {self.position} of run {self.run_id}"


class SuiteRunJudge(models.Model):
    """A second or third judge of a run (its first is SuiteRun.judge): a jury's other seats."""

    run = models.ForeignKey(SuiteRun, on_delete=models.CASCADE, related_name="jury")
    model = models.ForeignKey("catalogue.ModelEntry", on_delete=models.PROTECT, related_name="+")
    position = models.PositiveSmallIntegerField(help_text="2 or 3: the run's judge is the first.")

    class Meta:
        ordering = ["run", "position"]
        constraints = [models.UniqueConstraint(fields=["run", "model"], name="suite_run_judge_once"),
                       models.UniqueConstraint(fields=["run", "position"], name="suite_run_judge_position")]

    def __str__(self) -> str:
        return f"judge {self.position} of run {self.run_id}"


class SuiteAnswer(models.Model):
    """A contestant's answer to one prompt of a run: its latest generation and how many were made,
    and, once it is done, its checks' results (arena.suites.checks, evaluated by the runner when
    the answer lands: arena.suite_runs.checking.check_answers)."""

    run = models.ForeignKey(SuiteRun, on_delete=models.CASCADE, related_name="answers")
    prompt = models.ForeignKey(SuitePrompt, on_delete=models.CASCADE, related_name="+")
    contestant = models.ForeignKey("catalogue.ModelEntry", on_delete=models.PROTECT, related_name="+")
    generation = models.ForeignKey("generations.Generation", on_delete=models.CASCADE, related_name="+")
    attempts = models.PositiveSmallIntegerField(default=1)
    # Each check's result (checks.Result.as_json), in the order the suite's checks run (its defaults,
    # then the prompt's own); `passed` None until the answer is checked (or it failed to generate).
    checks = models.JSONField(default=list, blank=True)
    passed = models.BooleanField(null=True, blank=True, help_text="Every check passed (empty: not checked yet).")
    score = models.FloatField(null=True, blank=True, help_text="The checks' scores, weighted (0 to 1).")
    checked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "suites_suiteanswer"
        constraints = [models.UniqueConstraint(fields=["run", "prompt", "contestant"], name="suite_answer_once")]

    def __str__(self) -> str:
        return f"answer of {self.contestant_id} to {self.prompt_id} in run {self.run_id}"


class SuiteJudgement(models.Model):
    """A model judge's reading of one pair in one order: its latest generation and how many were
    made (its verdict is read from the generation's text: arena.suite_runs.judge.verdict_for).
    `judge`: which of the run's judges read it (empty: the run's judge; rows from before juries)."""

    run = models.ForeignKey(SuiteRun, on_delete=models.CASCADE, related_name="judgements")
    prompt = models.ForeignKey(SuitePrompt, on_delete=models.CASCADE, related_name="+")
    left = models.ForeignKey("catalogue.ModelEntry", on_delete=models.PROTECT, related_name="+")
    right = models.ForeignKey("catalogue.ModelEntry", on_delete=models.PROTECT, related_name="+")
    order = models.CharField(max_length=12)
    judge = models.ForeignKey("catalogue.ModelEntry", null=True, blank=True, on_delete=models.PROTECT,
                              related_name="+", help_text="Which of the run's judges; empty: the run's judge.")
    generation = models.ForeignKey("generations.Generation", on_delete=models.CASCADE, related_name="+")
    attempts = models.PositiveSmallIntegerField(default=1)

    class Meta:
        db_table = "suites_suitejudgement"
        constraints = [models.UniqueConstraint(fields=["run", "prompt", "left", "right", "order", "judge"],
                                               nulls_distinct=False, name="suite_judgement_once_per_judge")]

    def __str__(self) -> str:
        return f"judgement {self.order} of {self.left_id} vs {self.right_id} on {self.prompt_id} in run {self.run_id}"


def _tally(run: SuiteRun) -> dict[int, dict]:
    """Per contestant id: its answers (done, failed for good), constraint validity, and verdicts."""
    rows = {model.id: {"model": model, "wins": 0, "losses": 0, "ties": 0, "answered": 0, "failed": 0,
                       "constrained": 0, "valid": 0} for model in run.contestants}
    answers = SuiteAnswer.objects.filter(run=run).select_related("generation")
    for answer in answers:
        row, gen = rows[answer.contestant_id], answer.generation
        if gen.status == "done":
            row["answered"] += 1
            if gen.output_valid is not None:
                row["constrained"] += 1
                row["valid"] += gen.output_valid
        elif gen.finished and answer.attempts >= MAX_ATTEMPTS:
            row["failed"] += 1
    answer_of = {a.generation_id: a.contestant_id for a in answers}
    for left, right, outcome in run.verdicts().values_list("left_id", "right_id", "outcome"):
        left, right = answer_of[left], answer_of[right]
        if outcome in ("left", "right"):
            winner, loser = (left, right) if outcome == "left" else (right, left)
            rows[winner]["wins"] += 1
            rows[loser]["losses"] += 1
        else:
            rows[left]["ties"] += 1
            rows[right]["ties"] += 1
    return rows


class JudgeCheck(models.Model):
    """A quick check of a catalogue entry as a judge (arena.suite_runs.judge_checks): a few fixed
    pairs with an obviously better answer, each read in both orders through the judge's own
    prompt and constrained reply. Its readings join the entry's figures on the run form."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    judge = models.ForeignKey("catalogue.ModelEntry", on_delete=models.CASCADE, related_name="judge_checks")
    requested_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"judge check of {self.judge_id} at {self.created_at:%Y-%m-%d %H:%M}"


class JudgeCheckReading(models.Model):
    """One reading of a judge check: a fixed pair (its number in judge_checks.PAIRS), the order it
    was shown in, and the judge's generation (its verdict is read from the text)."""

    judge_check = models.ForeignKey(JudgeCheck, on_delete=models.CASCADE, related_name="readings")
    pair = models.PositiveSmallIntegerField()
    order = models.CharField(max_length=12)
    generation = models.ForeignKey("generations.Generation", on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["judge_check", "pair", "order"],
                                               name="judge_check_reading_once")]

    def __str__(self) -> str:
        return f"reading {self.order} of pair {self.pair} in {self.judge_check_id}"


class SuiteGrade(models.Model):
    """A judge model's grade of one answer against one rubric check (arena.suite_runs.rubric): its
    latest generation and how many were made. `key` names the check's spec (arena.suites.checks.
    rubric_key); `layout` is the prompt's ("answer_first", the grade; "rubric_first", a repeat on
    a sample that tells how much the layout sways the judge). `grade` (pass 1 / fail 0, or 1..5)
    and `passes` are stored once the answer's check is graded (null: not yet, or no grade)."""

    run = models.ForeignKey(SuiteRun, on_delete=models.CASCADE, related_name="grades")
    answer = models.ForeignKey(SuiteAnswer, on_delete=models.CASCADE, related_name="grades")
    key = models.CharField(max_length=16)
    scale = models.CharField(max_length=4)
    judge = models.ForeignKey("catalogue.ModelEntry", on_delete=models.PROTECT, related_name="+")
    layout = models.CharField(max_length=12)
    generation = models.ForeignKey("generations.Generation", on_delete=models.CASCADE, related_name="+")
    attempts = models.PositiveSmallIntegerField(default=1)
    grade = models.SmallIntegerField(null=True, blank=True)
    passes = models.BooleanField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["answer", "key", "judge", "layout"], name="suite_grade_once")]

    def __str__(self) -> str:
        return f"grade {self.layout} of answer {self.answer_id} by {self.judge_id}"
