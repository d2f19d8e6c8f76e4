from django.contrib import admin

from .models import Assignment, Category, Rule


class RuleInline(admin.TabularInline):
    model = Rule
    extra = 1


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ("name", "team", "description", "position")
    list_filter = ("team",)
    inlines = [RuleInline]


@admin.register(Rule)
class RuleAdmin(admin.ModelAdmin):
    list_display = ("position", "kind", "value", "category")
    list_editable = ("kind", "value", "category")
    list_display_links = ("position",)


@admin.register(Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ("subject_kind", "subject_id", "owner", "category", "source", "created_at")
    list_filter = ("source", "subject_kind", "category")
    readonly_fields = ("subject_kind", "subject_id", "owner", "prompt", "digest", "tags", "rule", "classifier",
                       "generation", "created_at", "updated_at")
