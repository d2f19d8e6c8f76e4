"""What the orchestrator remembers for people: every worker it ran and how it went."""

from datetime import UTC, datetime

from django.db import models


class WorkerProcess(models.Model):
    class State(models.TextChoices):
        STARTING = "starting"
        READY = "ready"
        STOPPING = "stopping"
        STOPPED = "stopped"
        FAILED = "failed"

    worker_id = models.CharField(max_length=120, unique=True)
    slug = models.SlugField(max_length=80, db_index=True)
    node = models.CharField(max_length=80, default="local")
    pid = models.PositiveIntegerField(null=True, blank=True)
    state = models.CharField(max_length=12, choices=State.choices, db_index=True)
    reason = models.TextField(blank=True)
    requested_at = models.DateTimeField()
    ready_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    cold_start_s = models.FloatField(null=True, blank=True)
    transitions = models.JSONField(default=list)

    class Meta:
        ordering = ["-requested_at"]
        verbose_name = "worker"

    def __str__(self) -> str:
        return self.worker_id


def _dt(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


class DatabaseRecorder:
    """The orchestrator's Recorder: one row per worker, with its transitions."""

    def transition(self, worker_id, slug, state, at, reason="", **fields):
        row, _created = WorkerProcess.objects.get_or_create(
            worker_id=worker_id, defaults={"slug": slug, "state": state, "requested_at": _dt(at)}
        )
        row.state = state
        row.transitions = [*row.transitions, {"state": state, "at": at, "reason": reason}]
        update = ["state", "transitions"]
        if reason:
            row.reason = reason
            update.append("reason")
        for name in ("pid", "node", "cold_start_s"):
            if name in fields:
                setattr(row, name, fields[name])
                update.append(name)
        if state == WorkerProcess.State.READY:
            row.ready_at = _dt(at)
            update.append("ready_at")
        if state in (WorkerProcess.State.STOPPED, WorkerProcess.State.FAILED):
            row.ended_at = _dt(at)
            update.append("ended_at")
        row.save(update_fields=update)
