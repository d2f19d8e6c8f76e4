from django.urls import path

from arena.tournaments import views

urlpatterns = [
    path("tournaments/", views.tournament_list, name="tournaments"),
]
