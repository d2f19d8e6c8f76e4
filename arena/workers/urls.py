"""The staff status page and the workers endpoint of the JSON API."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("status/", views.status_page, name="status"),
    path("api/v1/workers", api.workers, name="api-workers"),
]
