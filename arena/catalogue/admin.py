from django.contrib import admin

from .models import ModelEntry


@admin.register(ModelEntry)
class ModelEntryAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "kind", "precision", "memory_estimate_mb", "enabled")
    list_filter = ("kind", "enabled")
    search_fields = ("name", "slug", "source")
    prepopulated_fields = {"slug": ("name",)}
