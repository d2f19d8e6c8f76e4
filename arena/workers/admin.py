from django.contrib import admin

from .models import WorkerProcess


@admin.register(WorkerProcess)
class WorkerProcessAdmin(admin.ModelAdmin):
    list_display = ("worker_id", "slug", "node", "state", "cold_start_s", "requested_at", "ended_at", "reason")
    list_filter = ("state", "node", "slug")
    readonly_fields = [f.name for f in WorkerProcess._meta.fields]

    def has_add_permission(self, request):
        return False  # the orchestrator is the only writer

    def has_change_permission(self, request, obj=None):
        return False
