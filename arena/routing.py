from django.urls import path

from arena.playground.consumers import GenerationConsumer

websocket_urlpatterns = [
    path("ws/generations/<uuid:generation_id>/", GenerationConsumer.as_asgi()),
]
