from django.contrib.auth import views as auth_views
from django.urls import path

from arena.accounts import joining, passwords, views

urlpatterns = [
    path("account/tokens/", views.tokens_page, name="account-tokens"),
    path("account/tokens/<int:token_id>/revoke", views.token_revoke, name="account-token-revoke"),
    path("api/v1/tokens", views.tokens_api, name="api-tokens"),
    path("api/v1/tokens/<int:token_id>", views.token_api, name="api-token"),
    # Logging in and out, and one's own password: Django's views with our templates (templates/registration/).
    path("accounts/login/", joining.ArenaLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password_change/", passwords.ThrottledPasswordChangeView.as_view(), name="password_change"),
    path("accounts/password_change/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    path("accounts/password_reset/", auth_views.PasswordResetView.as_view(), name="password_reset"),
    path("accounts/password_reset/done/", auth_views.PasswordResetDoneView.as_view(), name="password_reset_done"),
    path("accounts/reset/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(),
         name="password_reset_confirm"),
    path("accounts/reset/done/", auth_views.PasswordResetCompleteView.as_view(), name="password_reset_complete"),
    # Joining (arena/accounts/joining.py).
    path("accounts/invitations/", joining.invitations_page, name="invitations"),
    path("accounts/invitations/<int:invitation_id>/revoke", joining.invitation_revoke, name="invitation-revoke"),
    path("accounts/sign-ups/<int:sign_up_id>/approve", joining.sign_up_decide, {"decision": "approve"},
         name="sign-up-approve"),
    path("accounts/sign-ups/<int:sign_up_id>/refuse", joining.sign_up_decide, {"decision": "refuse"},
         name="sign-up-refuse"),
    path("accounts/invite/<str:token>/", joining.invitation_accept, name="invitation-accept"),
    path("accounts/signup/", joining.sign_up, name="signup"),
]
