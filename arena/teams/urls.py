from django.urls import path

from . import views

urlpatterns = [
    path("teams/switch", views.switch, name="team-switch"),
]
