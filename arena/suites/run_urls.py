from django.urls import path, re_path

from . import run_views as views

urlpatterns = [
    path("suite-runs/", views.run_list, name="suite-runs"),
    path("suite-runs/new/", views.run_new, name="suite-run-new"),
    path("suite-runs/<uuid:run_id>/", views.run_detail, name="suite-run-detail"),
    path("suite-runs/<uuid:run_id>/progress", views.run_progress, name="suite-run-progress"),
    path("suite-runs/<uuid:run_id>/cancel", views.run_cancel, name="suite-run-cancel"),
    path("suite-runs/<uuid:run_id>/judge", views.run_judge, name="suite-run-judge"),
    re_path(r"^suite-runs/(?P<run_id>[0-9a-f-]{36})/export\.(?P<fmt>csv|json)$", views.run_export_file,
            name="suite-run-export"),
    # One JSON object on one line: what LLM Comparator loads (arena.suites.run_export).
    path("suite-runs/<uuid:run_id>/export.jsonl", views.run_export_comparator, name="suite-run-export-comparator"),
]
