"""Bearer-token authentication and JSON error bodies for the API."""

import functools
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from arena import jsonbody
from arena.accounts.models import ApiToken
from arena.generations import limits


def error(status: int, message: str, fields: dict | None = None) -> JsonResponse:
    body = {"error": {"message": message}}
    if fields:
        body["error"]["fields"] = fields
    return JsonResponse(body, status=status)


def created(body: dict, location: str, status: int = 201) -> JsonResponse:
    """A resource made (201) or work accepted (202), with where to read it in Location."""
    response = JsonResponse(body, status=status)
    response["Location"] = location
    return response


def form_error(form) -> JsonResponse:
    """A 400 naming every invalid field of a bound form, for the API's create endpoints."""
    fields = {name: " ".join(errs) for name, errs in form.errors.items()}
    return error(400, "Invalid request: " + "; ".join(f"{k}: {v}" for k, v in fields.items()), fields)


def limit_error(exc: limits.LimitExceeded) -> JsonResponse:
    """A 429 naming the per-user limit, with Retry-After."""
    response = JsonResponse(exc.as_json(), status=429)
    response["Retry-After"] = str(exc.retry_after_s)
    return response


def token_required(view):
    """The request must carry `Authorization: Bearer <token>`; sets request.user.

    Also where every endpoint's refusals by a limit become responses: a per-user limit
    (raised by the services that start work) a 429, a body over DATA_UPLOAD_MAX_MEMORY_SIZE
    (raised on reading request.body, before parsing) a 413."""

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
        try:
            return view(request, *args, **kwargs)
        except limits.LimitExceeded as exc:
            return limit_error(exc)
        except RequestDataTooBig:
            return error(413, limits.body_too_large_message(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))

    return wrapper


def json_body(request, fields: Iterable[str] | None = None) -> dict:
    """The request's JSON object; raises ValueError with a message fit for a 400, also for a
    field not in `fields` when given (a misspelt field must not be silently ignored)."""
    if not request.body:
        raise ValueError("The request body must be a JSON object.")
    body = jsonbody.parse(request.body)  # ValueError for anything a 400 must refuse
    if not isinstance(body, dict):
        raise ValueError("The request body must be a JSON object.")
    if fields is not None and (unknown := sorted(set(body) - set(fields))):
        raise ValueError(f"Unknown field(s): {', '.join(unknown)}.")
    return body
