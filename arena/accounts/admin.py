from django.contrib import admin

from .models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("hint", "name", "user", "created_at", "last_used_at", "expires_at", "revoked_at")
    readonly_fields = ("user", "name", "digest", "hint", "created_at", "last_used_at", "expires_at")

    def has_add_permission(self, request):
        return False  # tokens are made with `manage.py arena_token`, which shows them once
