from django.contrib import admin

from . import preparation
from .models import ModelEntry


@admin.register(ModelEntry)
class ModelEntryAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "engine", "kind", "precision", "memory_estimate_mb", "enabled",
                    "preparation_state")
    list_filter = ("engine", "kind", "enabled")
    fieldsets = (
        (None, {"fields": ("name", "slug", "description", "enabled")}),
        ("How it is served", {"fields": ("engine", "kind", "base", "precision", "source", "gguf_file", "draft",
                                         "context_length", "max_concurrency", "memory_estimate_mb")}),
        ("OpenAI-compatible endpoint (engine: openai)", {"fields": ("base_url", "remote_model", "api_key_env")}),
        ("Managed server (engine: server)", {"fields": ("server_command",)}),
        ("Defaults", {"fields": ("system_prompt", "default_params")}),
    )
    search_fields = ("name", "slug", "source")
    prepopulated_fields = {"slug": ("name",)}

    @admin.display(description="Preparation")
    def preparation_state(self, entry: ModelEntry) -> str:
        """An AWQ entry being quantised ahead of its first use (arena/catalogue/preparation.py)."""
        found = preparation.published([entry]).get(entry.slug)
        return found.summary() if found else ""
