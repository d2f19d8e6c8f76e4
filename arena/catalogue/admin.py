from django.contrib import admin

from . import preparation
from .models import ModelEntry


@admin.register(ModelEntry)
class ModelEntryAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "kind", "precision", "memory_estimate_mb", "enabled", "preparation_state")
    list_filter = ("kind", "enabled")
    search_fields = ("name", "slug", "source")
    prepopulated_fields = {"slug": ("name",)}

    @admin.display(description="Preparation")
    def preparation_state(self, entry: ModelEntry) -> str:
        """An AWQ entry being quantised ahead of its first use (arena/catalogue/preparation.py)."""
        found = preparation.published([entry]).get(entry.slug)
        return found.summary() if found else ""
