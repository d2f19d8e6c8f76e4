import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings")
django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402  (after Django is set up)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from arena.api.http import BodySizeLimit  # noqa: E402
from arena.origins import OriginValidator  # noqa: E402
from arena.routing import websocket_urlpatterns  # noqa: E402

# WebSockets, outermost first: the handshake's Origin must be one of the site's full origins
# (scheme, host and port: arena/origins.py; loopback pages only outside production, and only on
# PORT), so another site's page, or another web application on this machine, cannot open a socket
# with the user's cookie; a handshake without an Origin is refused too (browsers always send one;
# a script must send one naming this site).
# Then the session cookie gives scope["user"], and each consumer opens only its owner's object
# (4404 for anyone else, anonymous included; the worker status socket: staff, else 4403); a path
# no route matches gets 4404 as well, in one log line (arena/routing.py).
# Tested in tests/arena/test_security.py.
application = ProtocolTypeRouter(
    {
        "http": BodySizeLimit(django_asgi_app),  # an oversized body: 413 before Django reads it
        "websocket": OriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
