"""The OpenAI-compatible endpoints: GET /v1/models, GET /v1/models/<slug>, POST /v1/chat/completions.

Thin async views (uvicorn serves them on its event loop): translation lives in
`translate.py` (request -> generation) and `chunks.py` (events -> response shapes). A
completion is an ordinary arena generation (origin API: it shows in the owner's history,
and `id` = "chatcmpl-<generation id>"), run by the same Celery task as every other, which
asks the orchestrator for a worker; these views only follow its Redis Stream.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import transaction
from django.http import JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import csrf_exempt

from arena import conversations, jsonbody, streams
from arena.accounts.models import ApiToken
from arena.api.http import body_too_large_message
from arena.catalogue.models import ModelEntry
from arena.generations import limits, outcome, readiness, runs, services
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest
from inference import protocol as p
from inference.protocol import ParamError

from . import chunks
from .errors import (
    SERVER,
    OpenAIError,
    authentication_failed,
    generation_cancelled,
    generation_failed,
    invalid,
    model_not_found,
    rate_limited,
    too_large,
    too_long,
)
from .translate import ChatRequest, param_error, parse_request

log = logging.getLogger(__name__)
BLOCK_MS = 5000  # a quiet stream gets a keep-alive comment this often
DB_SETTLE_S = 10  # after the terminal event, how long the Celery task may take to store it
OWNER = "llm-arena"


def openai_endpoint(*methods: str):
    """Method check (405), bearer token (401) and OpenAIError -> its response, for an async view;
    a per-user limit's refusal is OpenAI's 429 rate_limit_exceeded, `messages` past the conversation
    limit its 400, a body over the limit a 413."""

    def decorate(view):
        @csrf_exempt  # no cookies are used: a bearer token cannot be forged cross-site
        @functools.wraps(view)
        async def wrapper(request, *args, **kwargs):
            try:
                if request.method not in methods:
                    response = OpenAIError(405, f"Method {request.method} is not allowed on {request.path}; "
                                                f"use {' or '.join(methods)}.", code="method_not_allowed").response()
                    response["Allow"] = ", ".join(methods)
                    return response
                request.user = await authenticate(request.headers.get("Authorization", ""))
                return await view(request, *args, **kwargs)
            except OpenAIError as err:
                return err.response()
            except limits.LimitExceeded as exc:
                return rate_limited(exc).response()
            except conversations.ConversationTooLong as exc:
                return too_long(exc).response()
            except RequestDataTooBig:
                return too_large(body_too_large_message(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)).response()

        return wrapper

    return decorate


@sync_to_async
def _user_for(token: str):
    return ApiToken.objects.user_for(token)


async def authenticate(header: str):
    scheme, _, token = header.partition(" ")
    user = await _user_for(token.strip()) if scheme.lower() == "bearer" and token.strip() else None
    if user is None:
        raise authentication_failed(present=bool(header))
    return user


# --- models ---------------------------------------------------------------------------
def model_object(entry: ModelEntry) -> dict:
    return {"id": entry.slug, "object": "model", "created": int(entry.created_at.timestamp()), "owned_by": OWNER}


@openai_endpoint("GET")
async def models(request):
    entries = [entry async for entry in ModelEntry.objects.enabled().order_by("slug")]
    return JsonResponse({"object": "list", "data": [model_object(e) for e in entries]})


@openai_endpoint("GET")
async def model_detail(request, slug):
    # A NUL (/v1/models/%00) cannot be a slug, and PostgreSQL refuses it in a query (a 500).
    entry = None if "\x00" in slug else await ModelEntry.objects.enabled().filter(slug=slug).afirst()
    if entry is None:
        raise model_not_found(slug)
    return JsonResponse(model_object(entry))


@csrf_exempt
def not_found(request, rest=""):
    return OpenAIError(404, f"Invalid URL ({request.method} {request.path}).", code="unknown_url").response()


# --- chat completions -----------------------------------------------------------------
@openai_endpoint("POST")
async def chat_completions(request):
    try:
        body = jsonbody.parse(request.body)
    except ValueError as exc:
        raise invalid(f"We could not parse the JSON body of your request: {exc} "
                      "Send a JSON object (Content-Type: application/json).") from exc
    chat = parse_request(body)
    entry = await ModelEntry.objects.enabled().filter(slug=chat.model).afirst()
    if entry is None:
        raise model_not_found(chat.model)
    conversations.check(prompt=chat.prompt, history=chat.history, system_prompt=chat.system_prompt)
    try:
        params = entry.params_with_defaults(chat.params).to_dict()
    except ParamError as exc:  # the entry's defaults with these overrides
        raise param_error(exc, chat.param_names) from exc
    gen = await create_generation(request.user, entry, chat, params)
    if chat.stream:
        return streaming_response(gen, chat.include_usage)
    response = await completion_response(gen)
    response["x-arena-generation-id"] = str(gen.id)
    return response


@sync_to_async
def create_generation(user, entry: ModelEntry, chat: ChatRequest, params: dict) -> Generation:
    with transaction.atomic():  # run_generation is queued when this commits
        request = GenerationRequest(model=entry, prompt=chat.prompt, system_prompt=chat.system_prompt,
                                    history=chat.history, params=params)
        gen = services.start_generation(user, request, origin=Generation.Origin.API, kind=runs.OPENAI)
    gen.readiness_withheld()  # read here, in a thread: the stream below asks it again
    return gen


def streaming_response(gen: Generation, include_usage: bool) -> StreamingHttpResponse:
    response = StreamingHttpResponse(event_stream(gen, include_usage), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # a proxy in front must not hold the tokens back
    response["x-arena-generation-id"] = str(gen.id)
    return response


async def event_stream(gen: Generation, include_usage: bool) -> AsyncIterator[str]:
    """The SSE body. A client that goes away cancels the generation (the worker stops)."""
    translator = chunks.StreamTranslator(id=chunks.completion_id(gen.id), created=int(gen.created_at.timestamp()),
                                         model=gen.model.slug, include_usage=include_usage)
    try:
        async with streams.following(stream_of(gen)) as subscription:
            async for ev in follow(subscription, gen):
                if ev is not None and gen.readiness_withheld():  # no "loading" comment: arena/generations/readiness.py
                    ev = readiness.redact_event(ev)
                    if ev is None:
                        continue
                for text in translator.feed(ev) if ev is not None else [chunks.comment("waiting")]:
                    yield text
                if translator.finished:
                    return
    except OpenAIError as err:  # follow() gave up on it (and cancelled it)
        yield translator.error(err)[0]
    except asyncio.CancelledError:
        raise  # the client disconnected: `finally` cancels the generation
    except Exception:  # Redis gone, ...: say so in the stream rather than cutting it
        log.exception("Streaming completion %s failed", gen.id)
        cancel(gen.id, "error")
        yield translator.error(OpenAIError(503, "Streaming was interrupted by a server error.", SERVER,
                                           code="stream_interrupted"))[0]
    finally:
        if not translator.finished:  # the client went away before the end
            cancel(gen.id, "client")


async def completion_response(gen: Generation) -> JsonResponse:
    """Wait for the generation's end (a client that leaves does not stop it) and answer."""
    terminal = None
    try:
        async with streams.following(stream_of(gen)) as subscription:
            async for ev in follow(subscription, gen):
                if ev is not None and ev["type"] in p.TERMINAL_EVENTS:
                    terminal = ev
                    break
    except OpenAIError:
        raise
    except Exception as exc:
        log.exception("Following completion %s failed", gen.id)
        raise OpenAIError(503, "The server lost track of this generation.", SERVER, code="stream_interrupted") \
            from exc
    assert terminal is not None  # follow() ends only after a terminal event, or raises
    stored = await settled(gen)
    if stored is not None:
        terminal = outcome.terminal_event(stored, terminal)
    if terminal["type"] == p.FAILED:
        raise generation_failed(terminal.get("code"), terminal.get("reason", ""))
    if terminal["type"] == p.CANCELLED:
        raise generation_cancelled()
    metrics = terminal.get("metrics") or {}
    return JsonResponse(chunks.completion(
        id=chunks.completion_id(gen.id), created=int(gen.created_at.timestamp()), model=gen.model.slug,
        text=terminal.get("text", ""), finish_reason=terminal.get("finish_reason", ""),
        prompt_tokens=metrics.get("prompt_tokens"), completion_tokens=metrics.get("generated_tokens")))


def stream_of(gen: Generation) -> str:
    return streams.keys().stream(str(gen.id))


async def follow(subscription: streams.Subscription, gen: Generation) -> AsyncIterator[dict | None]:
    """The generation's events from the first, then live (the process's stream hub reads them);
    None after each quiet BLOCK_MS.

    Ends with the stored outcome if the stream is gone while the generation is finished (it
    expired); raises a 503 after too long without a single event (no Celery worker took it),
    having cancelled it."""
    stream = stream_of(gen)
    heard_at = time.monotonic()
    silence_limit = settings.ARENA_GENERATION_TIMEOUT_S + 60
    while True:
        events = await next_events(subscription, stream, BLOCK_MS / 1000)
        if events:
            heard_at = time.monotonic()
            for ev in events:
                yield ev
            continue
        if not await subscription.hub.redis.exists(stream):
            stored = await outcome.astored(gen.id)
            if stored is not None:
                yield outcome.terminal_event(stored)
                return
        if time.monotonic() - heard_at > silence_limit:
            cancel(gen.id, "timeout")
            raise OpenAIError(503, f"Nothing happened to this generation for {silence_limit:.0f} s; it was cancelled.",
                              SERVER, code=p.TIMEOUT)
        yield None


async def next_events(subscription: streams.Subscription, stream: str, timeout: float) -> list[dict]:
    """The stream's new events, waiting up to `timeout` s for some ([] if none came: a quiet period)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        entries = (await subscription.next(timeout)).get(stream)
        timeout = deadline - asyncio.get_running_loop().time()
        if entries or timeout <= 0:  # a wake-up with nothing new (entries it already had) waits on
            return [ev for _key, ev in entries or ()]


async def settled(gen: Generation) -> Generation | None:
    """The stored generation once the Celery task has recorded its end (None if it never does)."""
    deadline = time.monotonic() + DB_SETTLE_S
    while time.monotonic() < deadline:
        stored = await outcome.astored(gen.id)
        if stored is not None:
            return stored
        await asyncio.sleep(0.05)
    return None


def cancel(generation_id, reason: str) -> None:
    """Ask the worker (or the task still waiting for one) to stop; it frees the slot within a second.
    A plain SET on the process's sync client: it must happen even while the view is being cancelled."""
    try:
        services.cancel([generation_id], reason)
    except Exception:  # Redis gone: the generation's own timeout still ends it
        log.warning("Could not cancel generation %s", generation_id)

