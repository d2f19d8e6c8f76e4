"""OpenAI-style errors: `{"error": {"message", "type", "param", "code"}}` with an HTTP status.

The openai client turns the status into its exception class (400 BadRequestError, 401
AuthenticationError, 404 NotFoundError, 5xx InternalServerError...) and reads `param` and
`code` from the body. It retries 408/409/429/5xx unless the `x-should-retry` header says
"false": we send that where a retry could only fail the same way (or start a second,
wasted generation).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import JsonResponse

from arena import conversations
from inference import protocol as p

INVALID_REQUEST = "invalid_request_error"
AUTHENTICATION = "authentication_error"
NOT_FOUND = "not_found_error"
SERVER = "server_error"


@dataclass
class OpenAIError(Exception):
    status: int
    message: str
    type: str = INVALID_REQUEST
    param: str | None = None
    code: str | None = None
    retry: bool = False  # True: the same request may well succeed later (5xx and 429)
    retry_after_s: int | None = None  # sent as Retry-After (the openai client waits that long)
    extra: dict | None = None  # more fields for the error object (a limit's name and numbers)

    def body(self) -> dict:
        return {"error": {"message": self.message, "type": self.type, "param": self.param, "code": self.code,
                          **(self.extra or {})}}

    def response(self) -> JsonResponse:
        response = JsonResponse(self.body(), status=self.status)
        if self.status >= 500 or self.status in (408, 409, 429):
            response["x-should-retry"] = "true" if self.retry else "false"
        if self.status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="llm-arena"'
        if self.retry_after_s is not None:
            response["Retry-After"] = str(self.retry_after_s)
        return response


def invalid(message: str, param: str | None = None, code: str | None = None) -> OpenAIError:
    """A 400 about the request itself."""
    return OpenAIError(400, message, INVALID_REQUEST, param, code)


def rate_limited(exc) -> OpenAIError:
    """OpenAI's 429 for a per-user limit (arena.generations.limits.LimitExceeded): code rate_limit_exceeded,
    with the limit named and Retry-After, which the openai client waits before retrying."""
    return OpenAIError(429, exc.message, "requests", None, "rate_limit_exceeded", retry=True,
                       retry_after_s=exc.retry_after_s,
                       extra={"limit": exc.limit, "allowed": exc.allowed, "current": exc.current,
                              "retry_after_s": exc.retry_after_s})


def too_long(exc: conversations.ConversationTooLong) -> OpenAIError:
    """OpenAI's 400 for `messages` past the conversation limit, in its words and codes."""
    if exc.limit == conversations.TURNS:
        return invalid(f"Invalid 'messages': {exc.current} user turns, at most {exc.allowed} allowed "
                       "(the conversation limit).", "messages", "array_above_max_length")
    return invalid(f"Invalid 'messages': {exc.current} characters in all, at most {exc.allowed} allowed.",
                   "messages", "string_above_max_length")


def too_large(message: str) -> OpenAIError:
    return OpenAIError(413, message, INVALID_REQUEST, None, "request_too_large")


def model_not_found(slug: str) -> OpenAIError:
    return OpenAIError(404, f"The model `{slug}` does not exist or you do not have access to it.",
                       INVALID_REQUEST, "model", "model_not_found")


def authentication_failed(present: bool) -> OpenAIError:
    """The 401: where a member gets a token (their API tokens page; the command is the operators')."""
    from django.urls import reverse

    where = f"make one on your API tokens page, {reverse('account-tokens')}"
    message = (f"Incorrect API key provided. Use an arena API token: {where}." if present else
               f"You didn't provide an API key. Send 'Authorization: Bearer <token>' with an arena API token: "
               f"{where}.")
    return OpenAIError(401, message, AUTHENTICATION, None, "invalid_api_key")


# How a generation that did not end `done` reaches the client. The worker's own failure
# codes (inference.protocol) are kept as `code`, except where OpenAI has a name for it.
_FAILURES = {
    # The request cannot run on this model as written: the client must change it.
    p.PROMPT_TOO_LONG: (400, INVALID_REQUEST, "messages", "context_length_exceeded", False),
    p.BAD_JOB: (400, INVALID_REQUEST, "messages", p.BAD_JOB, False),
    # The server's side: worth a retry only where the fault is passing.
    p.BUSY: (503, SERVER, None, p.BUSY, True),
    p.WORKER_DIED: (503, SERVER, None, p.WORKER_DIED, True),
    p.LOAD_FAILED: (503, SERVER, None, p.LOAD_FAILED, False),
    p.ENGINE_ERROR: (503, SERVER, None, p.ENGINE_ERROR, False),
    p.TIMEOUT: (503, SERVER, None, p.TIMEOUT, False),
}


def generation_failed(code: str | None, reason: str) -> OpenAIError:
    """The error for a FAILED event (`code`, `reason`); an unknown code is a server error."""
    status, kind, param, name, retry = _FAILURES.get(code or "", (503, SERVER, None, code or None, False))
    return OpenAIError(status, reason or "The generation failed.", kind, param, name, retry)


def generation_cancelled() -> OpenAIError:
    return OpenAIError(503, "The generation was cancelled before it finished (stopped from its page in the arena, "
                       "or its worker was shut down).", SERVER, None, "cancelled", False)
