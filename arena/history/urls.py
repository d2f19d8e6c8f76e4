from django.urls import path, re_path

from arena.history import views

urlpatterns = [
    path("history/", views.generations, name="history"),
    path("history/comparisons/", views.comparisons, name="history-comparisons"),
    path("history/anonymous/", views.anonymous_battles, name="history-anonymous"),
    path("history/tournaments/", views.tournaments, name="history-tournaments"),
    path("history/suite-runs/", views.suite_runs, name="history-suite-runs"),
    path("history/shared/", views.shared, name="history-shared"),
    re_path(r"^history/export/(?P<dataset>battles|generations)\.(?P<fmt>csv|json)$", views.export_page,
            name="history-export"),
    path("history/share/<str:kind>/<uuid:object_id>", views.share_create, name="share-create"),
    path("history/shared/<int:link_id>/revoke", views.share_revoke, name="share-revoke"),
    path("s/<str:token>/", views.shared_page, name="share"),
    path("api/v1/export/battles", views.export_api, {"dataset": "battles"}, name="api-export-battles"),
    path("api/v1/export/generations", views.export_api, {"dataset": "generations"}, name="api-export-generations"),
]
