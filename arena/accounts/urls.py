from django.urls import path

from arena.accounts import views

urlpatterns = [
    path("account/tokens/", views.tokens_page, name="account-tokens"),
    path("account/tokens/<int:token_id>/revoke", views.token_revoke, name="account-token-revoke"),
    path("api/v1/tokens", views.tokens_api, name="api-tokens"),
    path("api/v1/tokens/<int:token_id>", views.token_api, name="api-token"),
]
