from django.contrib import admin, messages

from .models import ApiToken, Invitation, SignUp


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("hint", "name", "user", "created_at", "last_used_at", "expires_at", "revoked_at")
    readonly_fields = ("user", "name", "digest", "hint", "created_at", "last_used_at", "expires_at")

    def has_add_permission(self, request):
        return False  # tokens are made with `manage.py arena_token`, which shows them once


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ("hint", "note", "email", "created_by", "created_at", "expires_at", "state", "used_by")
    readonly_fields = ("digest", "hint", "email", "note", "created_by", "created_at", "expires_at", "revoked_at",
                       "used_at", "used_by")

    def has_add_permission(self, request):
        return False  # made on /accounts/invitations/, which shows the link once


@admin.register(SignUp)
class SignUpAdmin(admin.ModelAdmin):
    list_display = ("user", "created_at", "approved_at", "approved_by")
    list_filter = (("approved_at", admin.EmptyFieldListFilter),)
    readonly_fields = ("user", "created_at", "approved_at", "approved_by")
    actions = ["approve"]

    def has_add_permission(self, request):
        return False  # people sign up on /accounts/signup/

    @admin.action(description="Approve the selected sign-ups (their users can log in)")
    def approve(self, request, queryset):
        approved = sum(sign_up.approve(request.user) for sign_up in queryset.select_related("user"))
        self.message_user(request, f"Approved {approved} sign-up{'s' if approved != 1 else ''}.", messages.SUCCESS)
