from django.urls import path

from . import api, views

urlpatterns = [
    path("suites/", views.suite_list, name="suites"),
    path("suites/new/", views.suite_new, name="suite-new"),
    path("suites/upload/", views.suite_upload, name="suite-upload"),
    path("suites/<uuid:suite_id>/", views.suite_detail, name="suite-detail"),
    path("suites/<uuid:suite_id>/import", views.suite_import, name="suite-import"),
    path("suites/<uuid:suite_id>/suite.<str:fmt>", views.suite_export, name="suite-export"),
    path("suites/<uuid:suite_id>/delete", views.suite_delete, name="suite-delete"),
    path("api/v1/suites", api.suites, name="api-suites"),
    path("api/v1/suites/<uuid:suite_id>", api.suite, name="api-suite"),
    path("api/v1/suites/<uuid:suite_id>/suite.<str:fmt>", api.suite_export, name="api-suite-export"),
]
