"""A generation: one prompt sent to one catalogue model, and everything it produced."""

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from arena.access import visible_to
from inference.protocol import SamplingParams, time_to_first_token
from inference.public_text import public_reason
from inference.structured import answer_valid

from . import readiness, runs, tags


def chat_messages(model, system_prompt: str, history, prompt: str) -> list[dict[str, str]]:
    """The messages a worker is sent: the system prompt (the request's, else its entry's), the
    earlier turns, the prompt."""
    system = system_prompt or model.system_prompt
    msgs = [{"role": "system", "content": system}] if system else []
    return msgs + list(history) + [{"role": "user", "content": prompt}]


class GenerationQuerySet(models.QuerySet):
    def visible(self):
        """Leaves out what a run kind hides for now (arena/generations/runs.py): a blind battle's
        answers until it is revealed, whose pages, API and stream would name the contestant."""
        qs = self
        for rule in runs.hidden():
            qs = qs.exclude(rule)
        return qs

    def tags_given(self, user, within=None) -> list[str]:
        """The tags this user and their teams have given, for the inputs' suggestions and the
        history's filter (a team's tags are shared, as its work is). A battle, a tournament match
        and a suite run's answers carry their tag on their generations, so these hold every tag
        given to something that ran. `within`: another set of generations' (a Q: one team's)."""
        if not user.is_authenticated:
            return []
        given = (self.filter(visible_to(user) if within is None else within).exclude(tag="").order_by()
                 .values_list("tag", flat=True))
        return sorted(given.distinct()[:400])


class Generation(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        LOADING = "loading"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    FINISHED = (Status.DONE, Status.FAILED, Status.CANCELLED)

    class Origin(models.TextChoices):
        WEB = "web"  # a browser watches it: leaving the page cancels it
        API = "api"  # a script polls it: it runs to the end
        SUITE = "suite"  # a suite run's answer or judgement: runs to the end, within the run's own window

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="generations")
    team = models.ForeignKey("teams.Team", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                             help_text="The team it was made in: its members see it (arena/access.py).")
    model = models.ForeignKey("catalogue.ModelEntry", on_delete=models.PROTECT, related_name="generations")
    origin = models.CharField(max_length=8, choices=Origin.choices, default=Origin.WEB)
    # The run it belongs to (arena/generations/runs.py): its kind, and the battle or suite run it is
    # part of (empty for a lone generation).
    run_kind = models.CharField(max_length=20, default=runs.PLAYGROUND, db_index=True)
    run_id = models.UUIDField(null=True, blank=True, db_index=True)
    system_prompt = models.TextField(blank=True)
    prompt = models.TextField()
    history = models.JSONField(default=list, blank=True, help_text="Earlier turns: [{role, content}, ...].")
    params = models.JSONField(default=dict)
    tag = tags.model_field()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.QUEUED, db_index=True)
    failure_reason = models.TextField(blank=True)
    text = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=20, blank=True)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    generated_tokens = models.PositiveIntegerField(null=True, blank=True)
    # Where the time went, each part apart, so a cold start never reads as a slow model:
    # created -> (queue_wait_s: the fair line, then the worker's own queue) -> (load_wait_s: a worker
    # made ready) -> the worker begins -> (time_to_first_token_s) -> first token -> (tokens_per_s).
    time_to_first_token_s = models.FloatField(
        null=True, blank=True, help_text="From when the worker began the answer to its first token "
        "(neither the wait in line nor the model's load).")
    tokens_per_s = models.FloatField(null=True, blank=True, help_text="Decode rate after the first token.")
    load_wait_s = models.FloatField(
        null=True, blank=True, help_text="Time spent waiting for a worker to be ready (a model loading: a cold "
        "start); about 0 when one was warm.")
    queue_wait_s = models.FloatField(
        null=True, blank=True, help_text="Time spent waiting in line: from creation to a free slot (the fair "
        "line), plus any wait in the worker's own queue.")
    metrics = models.JSONField(default=dict, blank=True)
    # The answer cache (arena/generations/cache.py): the hash of what decides a deterministic request's
    # answer (empty: not cached, nor reused), and, for an answer reused from an earlier identical
    # request, that request's generation (its text, token counts and speeds are the original's).
    cache_key = models.CharField(max_length=64, blank=True, db_index=True)
    cached_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL,
                                    related_name="cached_copies")
    output_valid = models.BooleanField(
        null=True, blank=True, help_text="Whether the answer follows its JSON schema or regex (empty: none given).")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    admitted_at = models.DateTimeField(
        null=True, blank=True, db_index=True,
        help_text="When it left the line for a free slot (arena/generations/admission.py); empty while it waits.")
    started_at = models.DateTimeField(null=True, blank=True)  # its worker began the answer (lifecycle.answering)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = GenerationQuerySet.as_manager()

    class Meta:
        db_table = "playground_generation"  # named under the app's first label; kept, so no table is renamed
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.model.slug}: {self.prompt[:40]}"

    def get_absolute_url(self) -> str:
        return reverse("generation-detail", args=[self.id])

    @property
    def finished(self) -> bool:
        return self.status in self.FINISHED

    @property
    def cached(self) -> bool:
        """A stored answer reused, not generated (arena/generations/cache.py). A cache serves one
        owner, whose generations are deleted together, so the original outlives its copies."""
        return self.cached_from_id is not None

    def sampling_params(self) -> SamplingParams:
        return SamplingParams.from_dict(self.params)

    def messages(self) -> list[dict[str, str]]:
        return chat_messages(self.model, self.system_prompt, self.history, self.prompt)

    def conversation(self) -> list[dict[str, str]]:
        """The turns so far including this one's answer: the history of a follow-up turn."""
        return [*self.history, {"role": "user", "content": self.prompt}, {"role": "assistant", "content": self.text}]

    def claim(self, from_status: str, to_status: str, **fields) -> bool:
        """Move status by conditional update, so two processes never both act on it."""
        updated = type(self).objects.filter(id=self.id, status=from_status).update(status=to_status, **fields)
        if updated:
            self.status = to_status
            for name, value in fields.items():
                setattr(self, name, value)
        return bool(updated)

    def finish(self, status: str, *, text: str, reason: str = "", finish_reason: str = "", metrics=None):
        """Record the outcome once; a generation that already finished is left alone. The reason is
        stored as anyone may read it (no server path, no traceback: inference.public_text); the
        full line, when it differs, goes to `metrics["failure_detail"]` for staff."""
        metrics = metrics or {}
        public = public_reason(reason)
        if public != reason:
            metrics = {**metrics, "failure_detail": reason}
        fields = {
            "text": text,
            "failure_reason": public,
            # A cancelled answer says so whichever way it was stopped (before it started too).
            "finish_reason": finish_reason or ("cancelled" if status == self.Status.CANCELLED else ""),
            "metrics": metrics,
            "prompt_tokens": metrics.get("prompt_tokens"),
            "generated_tokens": metrics.get("generated_tokens"),
            "tokens_per_s": metrics.get("decode_tokens_per_s"),
            "finished_at": timezone.now(),
        }
        if status == self.Status.DONE:
            fields["output_valid"] = self.verdict(text)
        ttft = time_to_first_token(metrics)
        if ttft is not None:
            fields["time_to_first_token_s"] = ttft
        queue = self.queue_wait(metrics)
        if queue is not None:
            fields["queue_wait_s"] = queue
        updated = type(self).objects.filter(id=self.id, status__in=self.live_statuses()).update(status=status, **fields)
        if updated:
            self.status = status
            for name, value in fields.items():
                setattr(self, name, value)
        return bool(updated)

    def queue_wait(self, metrics: dict) -> float | None:
        """Seconds in line: creation to admission (the fair line), plus the job's wait in its worker's
        queue (`time_in_queue`, where the worker said); None if it never left the line."""
        admitted = self.admitted_at or type(self).objects.filter(id=self.id).values_list(
            "admitted_at", flat=True).first()
        if admitted is None:
            return None
        return max(0.0, (admitted - self.created_at).total_seconds()) + max(0.0, metrics.get("time_in_queue") or 0.0)

    def record_load_wait(self, seconds: float) -> None:
        """How long its worker took to be ready, stored at once (before the job is handed over), so a
        page rendering the answer's end already has it."""
        self.load_wait_s = seconds
        type(self).objects.filter(id=self.id).update(load_wait_s=seconds)

    def readiness_withheld(self, fresh: bool = False) -> bool:
        """Whether its load and queue figures are withheld now: its owner has a blind verdict pending
        (arena/generations/readiness.py). Read once per object (a page, a frame is one moment); call it
        where the database may be used (not from async code) before anything renders the figures."""
        if fresh or not hasattr(self, "_readiness_withheld"):
            self._readiness_withheld = readiness.withheld(self.owner_id)
        return self._readiness_withheld

    @property
    def outcome(self) -> str:
        """How it ended, as status lines say it (arena.generations.status.outcome)."""
        from .status import outcome

        return outcome(self.status, self.finish_reason)

    def verdict(self, text: str) -> bool | None:
        """Whether `text` follows this generation's constraint; None when it has none."""
        schema, regex = self.params.get("json_schema"), self.params.get("regex")
        if schema is None and regex is None:
            return None
        return answer_valid(text, schema, regex)

    @classmethod
    def live_statuses(cls):
        return [cls.Status.QUEUED, cls.Status.LOADING, cls.Status.RUNNING]
