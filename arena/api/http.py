"""The JSON API's requests and responses: the error shape, reading a JSON body, refusals.

Every app's endpoints answer through these, so every error has one shape:
{"error": {"code": ..., "message": ..., "fields": {...}}}, its code one of `CODES`. This
toolkit imports no app: a rule below the endpoints that refuses a request (a per-user limit,
no such object) raises a `Refusal` subclass it defines, and `answer_refusals` turns it into its
response. `BodySizeLimit` refuses an oversized body
before Django reads it, in the same shape."""

import functools
import json
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from arena import jsonbody

# Every JSON error's machine code, and when it is given (the OpenAPI document's enum and
# docs/api.md list them). A code names what went wrong; the HTTP status says how to react.
CODES = {
    "invalid_request": "400: the body is not the JSON object the endpoint takes, or a field in it is wrong",
    "invalid_params": "400: the sampling parameters are not an object, or out of range",
    "conversation_too_long": "400: the conversation has more turns or characters than allowed",
    "unauthorized": "401: no valid API token",
    "forbidden": "403: staff only",
    "read_only": "403: a teammate's work, which members see but only its owner and staff change",
    "not_found": "404: no such object (or not yours: the same answer), or no such API URL",
    "conflict": "409: the object is not in a state that allows this (a running suite, a judged battle)",
    "method_not_allowed": "405: the URL exists but not for this method (Allow lists those it takes)",
    "not_votable": "409: the battle takes no verdict now",
    "unknown_reason": "400: a vote's reasons name a reason tag that is not on the list offered now",
    "request_too_large": "413: the body is larger than DATA_UPLOAD_MAX_MEMORY_SIZE",
    "limit_exceeded": "429: a per-user limit; wait Retry-After seconds",
}
# The code of an error said by its status alone.
STATUS_CODES = {400: "invalid_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
                405: "method_not_allowed", 409: "conflict", 413: "request_too_large", 429: "limit_exceeded"}


def error(status: int, message: str, fields: dict | None = None, *, code: str | None = None) -> JsonResponse:
    """The error response; its code `code`, else the one its status says (STATUS_CODES)."""
    code = code or STATUS_CODES[status]
    if code not in CODES:
        raise ValueError(f"Unknown error code {code!r}: list it in CODES.")
    shape: dict[str, object] = {"code": code, "message": message}
    if fields:
        shape["fields"] = fields
    return JsonResponse({"error": shape}, status=status)


def created(body: dict, location: str, status: int = 201) -> JsonResponse:
    """A resource made (201) or work accepted (202), with where to read it in Location."""
    response = JsonResponse(body, status=status)
    response["Location"] = location
    return response


def form_error(form) -> JsonResponse:
    """A 400 naming every invalid field of a bound form, for the API's create endpoints."""
    fields = {name: " ".join(errs) for name, errs in form.errors.items()}
    return error(400, "Invalid request: " + "; ".join(f"{k}: {v}" for k, v in fields.items()), fields)


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


class Refusal(Exception):
    """A request refused below the endpoints, answered with `status`, the JSON of `as_json()`
    (its `code` one of CODES) and `headers()` (e.g. the per-user limits' 429 with Retry-After)."""

    status = 400
    code = "invalid_request"

    def as_json(self) -> dict:
        return {"error": {"code": self.code, "message": str(self)}}

    def headers(self) -> dict[str, str]:
        return {}


def refusal_response(exc: Refusal) -> JsonResponse:
    response = JsonResponse(exc.as_json(), status=exc.status)
    for name, value in exc.headers().items():
        response[name] = value
    return response


def body_too_large_message(limit: int) -> str:
    return f"The request body is larger than the limit of {limit} bytes (DATA_UPLOAD_MAX_MEMORY_SIZE)."


def answer_refusals(view):
    """Where every endpoint's refusals become responses: a `Refusal` its own, a body over
    DATA_UPLOAD_MAX_MEMORY_SIZE (raised on reading request.body, before parsing) a 413."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except Refusal as exc:
            return refusal_response(exc)
        except RequestDataTooBig:
            return error(413, body_too_large_message(settings.DATA_UPLOAD_MAX_MEMORY_SIZE))

    return wrapper


def methods(*allowed: str):
    """The endpoint takes only these HTTP methods; another gets a JSON 405 naming them (Django's
    require_http_methods answers with an HTML page, which no API client can read)."""

    def decorate(view):
        @functools.wraps(view)
        def wrapper(request, *args, **kwargs):
            if request.method not in allowed:
                response = error(405, f"{request.path} takes {', '.join(allowed)}, not {request.method}.")
                response["Allow"] = ", ".join(allowed)
                return response
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


@csrf_exempt
def not_found(request, rest=""):
    """Any other /api/v1/ URL (an id that is not a UUID included): a JSON 404, not the HTML page."""
    return error(404, f"No such API URL: {request.method} {request.path}. See /api/v1/openapi.json.")


# --- request bodies: the ASGI guard in front of Django (arena/asgi.py) -----------------
class BodySizeLimit:
    """ASGI middleware: an HTTP request whose body is larger than DATA_UPLOAD_MAX_MEMORY_SIZE
    gets a 413 before the application reads or parses any of it (by its Content-Length, or,
    for a chunked body, as soon as the bytes received pass the limit)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if scope["type"] != "http" or limit is None:
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length", b"")
        if length.isdigit() and int(length) > limit:
            return await too_large(scope, send, limit)
        received = 0
        sent_413 = False

        async def counting_receive():
            nonlocal received, sent_413
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit and not sent_413:
                    sent_413 = True
                    await too_large(scope, send, limit)
                    return {"type": "http.disconnect"}  # the application stops reading and answers nobody
            return message

        async def guarded_send(message):
            if not sent_413:  # after our 413 the connection has had its answer
                await send(message)

        return await self.app(scope, counting_receive, guarded_send)


async def too_large(scope, send, limit: int) -> None:
    """The 413: JSON for the APIs (a body that fits both the arena's and OpenAI's error shape), text elsewhere."""
    message = body_too_large_message(limit)
    if scope.get("path", "").startswith(("/api/", "/v1/")):
        body = json.dumps({"error": {"code": "request_too_large", "message": message, "limit": "body_bytes",
                                     "allowed": limit,
                                     "type": "invalid_request_error", "param": None}}).encode()
        content_type = b"application/json"
    else:
        body, content_type = message.encode(), b"text/plain; charset=utf-8"
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
