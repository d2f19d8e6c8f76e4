"""Generations in the admin, read-only: where staff read why any one failed, with the worker's own
line (`metrics["failure_detail"]`, kept with paths and tracebacks) that users never see. The
answers of blind battles not yet revealed are left out, as everywhere (`visible()`): their model
would name a contestant."""

from typing import cast

from django.contrib import admin

from .models import Generation, GenerationQuerySet


@admin.register(Generation)
class GenerationAdmin(admin.ModelAdmin):
    list_display = ("id", "model", "owner", "origin", "status", "finish_reason", "created_at", "failure_reason")
    list_filter = ("status", "finish_reason", "origin")
    list_select_related = ("model", "owner")
    search_fields = ("prompt", "failure_reason")
    readonly_fields = (*(f.name for f in Generation._meta.fields), "failure_detail")

    def get_queryset(self, request):
        # The default manager's querysets are GenerationQuerySets (the stubs see a plain QuerySet here).
        return cast(GenerationQuerySet, super().get_queryset(request)).visible()

    @admin.display(description="The worker's own line")
    def failure_detail(self, gen: Generation) -> str:
        return (gen.metrics or {}).get("failure_detail", "")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
