"""The OpenAI-compatible API (/v1/models, /v1/chat/completions): any OpenAI client can
talk to the catalogue's models with an arena API token."""
from django.urls import path, re_path

from . import views

urlpatterns = [
    path("models", views.models, name="openai-models"),
    path("models/<str:slug>", views.model_detail, name="openai-model"),
    path("chat/completions", views.chat_completions, name="openai-chat-completions"),
    re_path(r"^(?P<rest>[\s\S]*)$", views.not_found),  # any other /v1/ path, a newline in it too
]
