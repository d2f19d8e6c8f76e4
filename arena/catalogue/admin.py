from django import forms
from django.contrib import admin, messages

from . import preparation
from .models import ModelEntry
from .probe import probe

MAX_PROBES = 4  # each waits for its answer: a few at a time keeps the request short


class AliasesField(forms.CharField):
    """The aliases as one comma-separated line, which is easier to edit than a JSON list
    (ModelEntry.clean validates and trims each one)."""

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, list) else value

    def to_python(self, value):
        return [part for part in (super().to_python(value) or "").split(",") if part.strip()]


class ModelEntryForm(forms.ModelForm):  # the admin gives it the model and the fields
    aliases = AliasesField(required=False, help_text=ModelEntry._meta.get_field("aliases").help_text
                           + " Separate them with commas.")


@admin.register(ModelEntry)
class ModelEntryAdmin(admin.ModelAdmin):
    form = ModelEntryForm
    list_display = ("name", "label", "slug", "engine", "kind", "precision", "memory_estimate_mb", "enabled",
                    "preparation_state")
    list_filter = ("engine", "kind", "enabled")
    fieldsets = (
        (None, {"fields": ("name", "label", "slug", "description", "enabled")}),
        ("How it is served", {"fields": ("engine", "kind", "base", "precision", "source", "gguf_file", "draft",
                                         "context_length", "max_concurrency", "memory_estimate_mb")}),
        ("OpenAI-compatible endpoint (engine: openai)", {"fields": ("base_url", "remote_model", "api_key_env")}),
        ("Managed server (engine: server)", {"fields": ("server_command",)}),
        ("Defaults", {"fields": ("system_prompt", "default_params")}),
        ("Identity (blind battles)", {"fields": ("aliases",)}),
    )
    search_fields = ("name", "slug", "source")
    prepopulated_fields = {"slug": ("name",)}
    actions = ["test_entries"]

    def get_list_display(self, request):
        """The preparation column as this viewer may see it: an entry playing in one of their own
        unrevealed tournaments shows none (a quantisation starting at a match's first use would
        name the pair: arena/tournaments/secrecy.py)."""
        from arena.tournaments.secrecy import secret_slugs

        secret = secret_slugs(request.user)

        @admin.display(description="Preparation")
        def preparation_for_viewer(entry: ModelEntry) -> str:
            return "" if entry.slug in secret else self.preparation_state(entry)

        return [preparation_for_viewer if name == "preparation_state" else name
                for name in super().get_list_display(request)]

    @admin.display(description="Preparation")
    def preparation_state(self, entry: ModelEntry) -> str:
        """An AWQ entry being quantised ahead of its first use (arena/catalogue/preparation.py)."""
        found = preparation.published([entry]).get(entry.slug)
        return found.summary() if found else ""

    @admin.action(description="Test: start, send a short prompt, report TTFT and tokens/s")
    def test_entries(self, request, queryset):
        entries = list(queryset.filter(enabled=True)[:MAX_PROBES])
        if not entries:
            self.message_user(request, "Select enabled entries to test.", messages.WARNING)
        for entry in entries:
            result = probe(entry, request.user)
            self.message_user(request, result.summary(), messages.SUCCESS if result.ok else messages.ERROR)
