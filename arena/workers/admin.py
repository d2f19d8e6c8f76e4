"""The worker records in the admin. A staff user judging their own blind tournament does not
see its contestants' workers here (arena/battles/secrecy.py): the changelist leaves them
out (and out of its slug filter) and says how many it left out, their change pages answer
as for a record that does not exist, and another worker's reason or transitions that name
one ("evicted to make room for SLUG") show it redacted."""

import logging

import redis
from django.contrib import admin

from arena import streams
from arena.battles.secrecy import HIDDEN_LABEL, redact, secret_slugs

from .models import WorkerProcess
from .status import snapshot

log = logging.getLogger(__name__)


class VisibleSlugFilter(admin.SimpleListFilter):
    """The slug filter, offering only the slugs this viewer may see (the default one lists every slug)."""

    title = "slug"
    parameter_name = "slug"

    def lookups(self, request, model_admin):
        slugs = model_admin.get_queryset(request).order_by("slug").values_list("slug", flat=True).distinct()
        return [(slug, slug) for slug in slugs]

    def queryset(self, request, queryset):
        return queryset.filter(slug=self.value()) if self.value() else queryset


@admin.register(WorkerProcess)
class WorkerProcessAdmin(admin.ModelAdmin):
    list_display = ("worker_id", "slug", "node", "state", "cold_start_s", "requested_at", "ended_at", "shown_reason")
    list_filter = ("state", "node", VisibleSlugFilter)
    readonly_fields = [
        {"reason": "shown_reason", "transitions": "shown_transitions"}.get(f.name, f.name)
        for f in WorkerProcess._meta.fields
    ]
    fields = tuple(readonly_fields)
    change_list_template = "workers/admin_change_list.html"

    def get_queryset(self, request):
        """Every view of this admin (changelist, change, history, delete) reads through here."""
        return super().get_queryset(request).exclude(slug__in=secret_slugs(request.user))

    # The display methods see only the row: the viewer's secret slugs ride on it (`hide`),
    # set where the changelist and the change page fetch their rows.
    def get_changelist_instance(self, request):
        changelist = super().get_changelist_instance(request)
        hide = secret_slugs(request.user)
        for row in changelist.result_list:  # evaluates the page's queryset, which the template then reuses
            row.hide = hide
        return changelist

    def get_object(self, request, object_id, from_field=None):
        row = super().get_object(request, object_id, from_field)
        if row is not None:
            row.hide = secret_slugs(request.user)
        return row

    @admin.display(description="reason")
    def shown_reason(self, row):
        return redact(row.reason, getattr(row, "hide", frozenset()))

    @admin.display(description="transitions")
    def shown_transitions(self, row):
        hide: frozenset[str] = getattr(row, "hide", frozenset())
        return [{**t, "reason": redact(t.get("reason", ""), hide)} for t in row.transitions]

    def changelist_view(self, request, extra_context=None):
        hide = secret_slugs(request.user)
        records = WorkerProcess.objects.filter(slug__in=hide).count() if hide else 0
        hidden = {"label": HIDDEN_LABEL, "records": records, "live": _live(hide)} if records else None
        return super().changelist_view(request, extra_context={**(extra_context or {}), "hidden": hidden})

    def has_add_permission(self, request):
        return False  # the orchestrator is the only writer

    def has_change_permission(self, request, obj=None):
        return False


def _live(hide: frozenset[str]) -> dict | None:
    """The orchestrator's aggregate of the hidden workers running now (how many, requests in
    flight); None when none runs or Redis cannot be read (the list does not need it)."""
    try:
        return snapshot(streams.client(), streams.keys(), hide=hide)["hidden"]
    except redis.RedisError as exc:
        log.warning("Could not read the orchestrator's status: %s", exc)
        return None
