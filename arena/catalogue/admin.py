from functools import partial

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db import transaction
from django.db.models import Field
from django.http import Http404, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.urls import path
from django.utils import timezone

from . import hiding, preparation
from .forms import StoredKeyForm
from .keys import KEY_DROPPED
from .models import ModelEntry
from .probe import probe

Engine = ModelEntry.Engine
ALL_ENGINES = tuple(Engine.values)
# The form's sections, each shown only for the engines it applies to (a field in one section only,
# so switching the engine on the page shows and hides whole sections: static/js/catalogue_admin.js).
SECTIONS = (
    (None, ALL_ENGINES, ("name", "label", "slug", "description", "engine", "enabled")),
    ("Check before enabling", (Engine.OPENAI, Engine.SERVER), ("check_state",)),
    ("Managed server", (Engine.SERVER,), ("server_command",)),
    ("OpenAI-compatible endpoint", (Engine.OPENAI,), ("base_url",)),
    ("The model at the server", (Engine.OPENAI, Engine.SERVER), ("remote_model",)),
    ("API key", (Engine.OPENAI,), ("api_key", "remove_stored_key", "api_key_env")),
    ("Model files", (Engine.TRANSFORMERS, Engine.LLAMACPP, Engine.SERVER),
     ("source", "gguf_file", "memory_estimate_mb", "gpus")),
    ("Kind and draft model", (Engine.TRANSFORMERS, Engine.LLAMACPP), ("kind", "draft")),
    ("Precision", (Engine.TRANSFORMERS,), ("precision",)),
    ("Serving", ALL_ENGINES, ("base", "in_chat_draws", "context_length", "max_concurrency", "cpus")),
    ("Defaults", ALL_ENGINES, ("system_prompt", "default_params")),
    ("Price (what an answer costs, shown in suite runs)", ALL_ENGINES,
     ("price_input_per_mtok", "price_output_per_mtok", "price_per_hour")),
    ("Identity (blind battles)", ALL_ENGINES, ("aliases",)),
)
ENGINE_FIELDS = {engine: {f for _, engines, fields in SECTIONS if engine in engines for f in fields}
                 for engine in ALL_ENGINES}

STAYS_DISABLED = "{name} stays disabled: {problem}"
CHECK_PASSED = "{name} passed its check and is enabled."
TEST_CHECK_FAILED = "{name}: the check failed: {problem}"
TEST_CHECK_PASSED = "{name}: the check passed."
TEST_DISABLED = "{name} is disabled: enable it (it is checked first) to test a generation."


class AliasesField(forms.CharField):
    """The aliases as one comma-separated line, which is easier to edit than a JSON list
    (ModelEntry.clean validates and trims each one)."""

    def prepare_value(self, value):
        return ", ".join(value) if isinstance(value, list) else value

    def to_python(self, value):
        return [part for part in (super().to_python(value) or "").split(",") if part.strip()]


class ModelEntryForm(StoredKeyForm):  # the admin gives it the model and the fields
    aliases = AliasesField(required=False, help_text=ModelEntry._meta.get_field("aliases").help_text
                           + " Separate them with commas.")
    DEFAULTED = ("cpus", "gpus")  # left empty: the model's default (the page shows it filled in)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name in self.DEFAULTED:
            if name in self.fields:
                self.fields[name].required = False

    def clean(self):
        """Fields the chosen engine does not use (hidden on the page) go back to their defaults, so that
        a value left from another engine neither applies nor fails the entry's validation unseen."""
        super().clean()
        cleaned = self.cleaned_data
        used = ENGINE_FIELDS.get(cleaned.get("engine", ""), set())
        for name in set(self.fields) - used:
            if name in ("api_key", "remove_stored_key", "check_state"):
                continue
            field = ModelEntry._meta.get_field(name)
            assert isinstance(field, Field), "the form's other fields are the model's own"
            cleaned[name] = field.get_default() if not field.null else None
        for name in self.DEFAULTED:
            if name in cleaned and cleaned[name] is None and name not in self.errors:
                field = ModelEntry._meta.get_field(name)
                assert isinstance(field, Field)
                cleaned[name] = field.get_default()
        if "api_key" not in used and self.instance.has_stored_key:
            self.instance.store_key("")  # no longer an endpoint: its key goes
        return cleaned


@admin.register(ModelEntry)
class ModelEntryAdmin(admin.ModelAdmin):
    form = ModelEntryForm
    list_display = ("name", "label", "slug", "engine", "kind", "precision", "memory_estimate_mb", "cpus", "gpus",
                    "enabled", "check_column", "preparation_state")
    list_filter = ("engine", "kind", "base", "enabled")
    readonly_fields = ("check_state",)
    search_fields = ("name", "slug", "source")
    prepopulated_fields = {"slug": ("name",)}

    class Media:
        js = ("js/catalogue_admin.js",)
        css = {"all": ("css/catalogue_admin.css",)}

    def get_fieldsets(self, request, obj=None):
        """SECTIONS, those of engines other than the entry's hidden (the script shows them when the
        engine changes); the posted engine's on a form sent back with errors."""
        engine = request.POST.get("engine") if request.method == "POST" else None
        engine = engine or (obj.engine if obj else request.GET.get("engine")) or Engine.TRANSFORMERS
        fieldsets = []
        for title, engines, fields in SECTIONS:
            shown: tuple[str, ...] = fields if obj and obj.has_stored_key else tuple(
                f for f in fields if f != "remove_stored_key")
            classes = () if engines == ALL_ENGINES else (
                "engine-section", *(f"engine-{e}" for e in engines), *(() if engine in engines else ("hidden",)))
            fieldsets.append((title, {"fields": shown, "classes": classes}))
        return fieldsets

    def save_model(self, request, obj, form, change):
        """An openai or server entry being enabled is saved disabled, then checked once the save has
        committed (the check waits on the network: not while holding the database's write lock)."""
        held = obj.hold_for_check()
        super().save_model(request, obj, form, change)
        if form.key_dropped:
            self.message_user(request, KEY_DROPPED, messages.WARNING)
        if held:
            transaction.on_commit(partial(self._finish_check, request, obj))

    def _finish_check(self, request, entry: ModelEntry) -> None:
        problem = entry.enable_if_checked()
        if problem:
            self.message_user(request, STAYS_DISABLED.format(name=entry.name, problem=problem), messages.WARNING)
        else:
            self.message_user(request, CHECK_PASSED.format(name=entry.name), messages.SUCCESS)

    @admin.display(description="Check")
    def check_state(self, entry: ModelEntry) -> str:
        """What the check before enabling found, and when."""
        if entry.pk is None or entry.checked_at is None:
            return ("Not checked yet: saved enabled, it is checked first (the key is there, the endpoint answers and "
                    "lists the model; for a server, that commands are allowed and its program is found).")
        when = timezone.localtime(entry.checked_at).strftime("%Y-%m-%d %H:%M:%S %Z")
        return f"Failed {when}: {entry.check_error}" if entry.check_error else f"Passed {when}."

    @admin.display(description="Check")
    def check_column(self, entry: ModelEntry) -> str:
        if not entry.is_checked or entry.checked_at is None:
            return ""
        return f"failed: {entry.check_error}" if entry.check_error else "passed"

    def get_list_display(self, request):
        """The preparation column as this viewer may see it: an entry playing in one of their own
        unrevealed tournaments shows none (a quantisation starting at a match's first use would
        name the pair: arena/catalogue/hiding.py)."""
        secret = set(hiding.hidden_from(request.user).values_list("slug", flat=True))

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

    # --- the change page's Test button ------------------------------------------------------
    def get_urls(self):
        test = path("<path:object_id>/test/", self.admin_site.admin_view(self.test_view),
                    name="catalogue_modelentry_test")
        return [test, *super().get_urls()]

    def test_view(self, request, object_id):
        """POST: check an openai or server entry (recorded), then, if it is enabled, start it, send a
        short prompt and report TTFT and tokens/s or the failure, on the change page."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        entry = self.get_object(request, unquote(object_id))
        if entry is None or not self.has_change_permission(request, entry):
            raise Http404("No such catalogue entry.")
        back = redirect("admin:catalogue_modelentry_change", entry.pk)
        if entry.is_checked:
            if problem := entry.recheck():
                self.message_user(request, TEST_CHECK_FAILED.format(name=entry.name, problem=problem), messages.ERROR)
                return back
            self.message_user(request, TEST_CHECK_PASSED.format(name=entry.name), messages.SUCCESS)
        if not entry.enabled:
            self.message_user(request, TEST_DISABLED.format(name=entry.name), messages.WARNING)
            return back
        result = probe(entry, request.user)
        self.message_user(request, result.summary(), messages.SUCCESS if result.ok else messages.ERROR)
        return back
