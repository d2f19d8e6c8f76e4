from django.urls import path

from arena.battles.consumers import BattleConsumer
from arena.playground.consumers import GenerationConsumer
from arena.workers.consumers import StatusConsumer

websocket_urlpatterns = [
    path("ws/generations/<uuid:generation_id>/", GenerationConsumer.as_asgi()),
    path("ws/battles/<uuid:battle_id>/", BattleConsumer.as_asgi()),
    path("ws/status/", StatusConsumer.as_asgi()),
]
