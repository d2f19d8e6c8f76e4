import logging

from django.urls import path, re_path

from arena.battles.consumers import BattleConsumer
from arena.playground.consumers import GenerationConsumer
from arena.workers.consumers import StatusConsumer

log = logging.getLogger(__name__)
NO_SUCH_SOCKET = 4404  # what the consumers answer for an object that is not there (or not the caller's)
LOGGED_PATH_CHARS = 200


async def unrouted(scope, receive, send):
    """Any other path, `/ws/generations/not-a-uuid/` included: refused before accepting, as a
    socket that is not there (close code 4404; the server answers the handshake with 403), in one
    log line. Without it Channels' URLRouter raised ValueError("No route found"): a 500 and a full
    traceback in the log for every such handshake, from anyone, logged in or not."""
    message = await receive()
    if message["type"] != "websocket.connect":
        return
    # ascii() and a cap: the path is the client's, so one line it stays (no newline, no flood of text).
    log.warning("WebSocket refused (no such socket): %s", ascii(scope.get("path", ""))[:LOGGED_PATH_CHARS])
    await send({"type": "websocket.close", "code": NO_SUCH_SOCKET})


websocket_urlpatterns = [
    path("ws/generations/<uuid:generation_id>/", GenerationConsumer.as_asgi()),
    path("ws/battles/<uuid:battle_id>/", BattleConsumer.as_asgi()),
    path("ws/status/", StatusConsumer.as_asgi()),
    re_path(r"", unrouted),  # last: everything the routes above do not match
]
