"""Bearer-token authentication of the JSON API: every endpoint is wrapped in `token_required`."""

import functools

from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt

from arena.api.http import answer_refusals, error

from .models import ApiToken

# A member makes their own tokens on the API tokens page (manage.py arena_token is the operators').
TOKEN_REFUSED = ("Missing or invalid API token: send 'Authorization: Bearer <token>'. "
                 "Make a token on your API tokens page: {url}")


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
            response = error(401, TOKEN_REFUSED.format(url=request.build_absolute_uri(reverse("account-tokens"))))
            response["WWW-Authenticate"] = 'Bearer realm="llm-arena"'
            return response
        request.user = user
        return answering(request, *args, **kwargs)

    return wrapper
