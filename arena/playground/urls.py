"""The playground's page, a generation's page, and the generation endpoints of the JSON API."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("playground/", views.playground, name="playground"),
    path("g/<uuid:generation_id>/", views.generation_detail, name="generation-detail"),
    path("api/v1/generations", api.create_generation, name="api-generations"),
    path("api/v1/generations/<uuid:generation_id>", api.generation, name="api-generation"),
]
