from django.urls import path

from arena.tournaments import api, views

urlpatterns = [
    path("tournaments/", views.tournament_list, name="tournaments"),
    path("tournaments/new/", views.tournament_new, name="tournament-new"),
    path("tournaments/<uuid:tournament_id>/", views.tournament_detail, name="tournament-detail"),
    path("tournaments/<uuid:tournament_id>/winner", views.tournament_winner, name="tournament-winner"),
    path("tournaments/<uuid:tournament_id>/rerun", views.tournament_rerun, name="tournament-rerun"),
    path("tournaments/<uuid:tournament_id>/stop", views.tournament_stop, name="tournament-stop"),
    path("tournaments/<uuid:tournament_id>/resume", views.tournament_resume, name="tournament-resume"),
    path("tournaments/<uuid:tournament_id>/replay", views.tournament_replay, name="tournament-replay"),
    path("api/v1/tournaments", api.create_tournament, name="api-tournaments"),
    path("api/v1/tournaments/<uuid:tournament_id>", api.tournament, name="api-tournament"),
    path("api/v1/tournaments/<uuid:tournament_id>/winner", api.winner, name="api-tournament-winner"),
    path("api/v1/tournaments/<uuid:tournament_id>/rerun", api.rerun, name="api-tournament-rerun"),
]
