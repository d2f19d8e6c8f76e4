"""The catalogue's endpoints of the JSON API: the enabled models, and the staff catalogue."""

from django.urls import path

from . import api

urlpatterns = [
    path("api/v1/models", api.models, name="api-models"),
    path("api/v1/catalogue", api.catalogue, name="api-catalogue"),
    path("api/v1/catalogue/<slug:slug>", api.catalogue_entry, name="api-catalogue-entry"),
    path("api/v1/catalogue/<slug:slug>/test", api.test_entry, name="api-catalogue-test"),
]
