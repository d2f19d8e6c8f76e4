from django.urls import path

from arena.playground.consumers import GenerationConsumer
from orchestration.consumers import StatusConsumer

websocket_urlpatterns = [
    path("ws/generations/<uuid:generation_id>/", GenerationConsumer.as_asgi()),
    path("ws/status/", StatusConsumer.as_asgi()),
]
