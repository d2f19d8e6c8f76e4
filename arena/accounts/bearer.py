"""Bearer-token authentication of the JSON API: every endpoint is wrapped in `token_required`."""

import functools

from django.views.decorators.csrf import csrf_exempt

from arena.api.http import answer_refusals, error

from .models import ApiToken


def token_required(view):
    """The request must carry `Authorization: Bearer <token>`; sets request.user.

    The endpoint's refusals (a per-user limit, a body too large) become responses too
    (arena.api.http.answer_refusals)."""
    answering = answer_refusals(view)

    @csrf_exempt  # no cookies are used: a bearer token cannot be forged cross-site
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        header = request.headers.get("Authorization", "")
        scheme, _, token = header.partition(" ")
        user = ApiToken.objects.user_for(token.strip()) if scheme.lower() == "bearer" else None
        if user is None:
            response = error(401, "Missing or invalid API token: send 'Authorization: Bearer <token>'.")
            response["WWW-Authenticate"] = 'Bearer realm="llm-arena"'
            return response
        request.user = user
        return answering(request, *args, **kwargs)

    return wrapper
