from django.contrib import admin

from .models import ArenaExclusion, Battle, ReasonTag


@admin.register(Battle)
class BattleAdmin(admin.ModelAdmin):
    """Battle records, for looking up a verdict. A judge's fields are what the judge said:
    read-only, never edited by hand."""

    list_display = ("id", "mode", "outcome", "judge", "tag", "blind", "revealed", "created_at")
    list_filter = ("mode", "outcome", "blind", ("judge", admin.RelatedOnlyFieldListFilter))
    search_fields = ("left__prompt", "tag")
    raw_id_fields = ("owner", "left", "right", "parent")
    readonly_fields = ("judge", "judge_template_version", "judgements", "created_at", "reasons", "comment")


@admin.register(ArenaExclusion)
class ArenaExclusionAdmin(admin.ModelAdmin):
    """The entries kept out of the anonymous battles' draw (they stay enabled everywhere else)."""

    list_display = ("model", "reason", "created_at")
    search_fields = ("model__name", "model__slug", "reason")
    autocomplete_fields = ("model",)
    readonly_fields = ("created_at",)


@admin.register(ReasonTag)
class ReasonTagAdmin(admin.ModelAdmin):
    """The reasons a vote may carry (one list for the site). Retire one by unticking *active*:
    verdicts that carry it keep it; a slug, once used, is never given to another reason."""

    list_display = ("label", "slug", "team", "position", "active")
    list_editable = ("position", "active")
    prepopulated_fields = {"slug": ("label",)}
    search_fields = ("label", "slug")

    def get_readonly_fields(self, request, obj=None):
        return ("slug",) if obj is not None else ()  # stored in verdicts: renaming it would orphan them

    def get_prepopulated_fields(self, request, obj=None):
        return {} if obj is not None else self.prepopulated_fields
