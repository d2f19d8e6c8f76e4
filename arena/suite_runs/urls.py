"""The suite run pages and the suite runs' API."""

from django.urls import path

from . import api, views

urlpatterns = [
    path("suite-runs/", views.run_list, name="suite-runs"),
    path("suite-runs/new/", views.run_new, name="suite-run-new"),
    path("suite-runs/<uuid:run_id>/", views.run_detail, name="suite-run-detail"),
    path("suite-runs/<uuid:run_id>/progress", views.run_progress, name="suite-run-progress"),
    path("suite-runs/<uuid:run_id>/cancel", views.run_cancel, name="suite-run-cancel"),
    # Compare with another run of the suite: pick one, then the comparison (the later run first).
    path("suite-runs/<uuid:run_id>/compare/", views.run_compare_pick, name="suite-run-compare-pick"),
    path("suite-runs/<uuid:run_id>/compare/<uuid:earlier_id>/", views.run_compare, name="suite-run-compare"),
    path("suite-runs/<uuid:run_id>/matrix", views.run_matrix, name="suite-run-matrix"),
    path("suite-runs/<uuid:run_id>/recheck", views.run_recheck, name="suite-run-recheck"),
    path("suite-runs/<uuid:run_id>/judge", views.run_judge, name="suite-run-judge"),
    path("suite-runs/<uuid:run_id>/export.csv", views.run_export_file, {"fmt": "csv"}, name="suite-run-export-csv"),
    path("suite-runs/<uuid:run_id>/export.json", views.run_export_file, {"fmt": "json"}, name="suite-run-export-json"),
    # One JSON object on one line: what LLM Comparator loads (arena.suite_runs.export).
    path("suite-runs/<uuid:run_id>/export.jsonl", views.run_export_comparator, name="suite-run-export-comparator"),
    path("api/v1/suite-runs", api.suite_runs, name="api-suite-runs"),
    path("api/v1/suite-runs/<uuid:run_id>", api.suite_run, name="api-suite-run"),
    path("api/v1/suite-runs/<uuid:run_id>/answers", api.answers, name="api-suite-run-answers"),
    path("api/v1/suite-runs/<uuid:run_id>/cancel", api.cancel, name="api-suite-run-cancel"),
    path("api/v1/suite-runs/<uuid:run_id>/compare/<uuid:earlier_id>", api.compare, name="api-suite-run-compare"),
    path("api/v1/suite-runs/<uuid:run_id>/recheck", api.recheck, name="api-suite-run-recheck"),
]
