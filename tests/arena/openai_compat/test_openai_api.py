"""The OpenAI-compatible API (/v1/): request translation, chunk building, errors in OpenAI's
shape, and the views over real Redis streams written as a worker writes them.

The real `openai` client against the running application is in tests/live/test_openai_client.py."""

import asyncio
import json
import time
from itertools import pairwise

import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from channels.routing import URLRouter
from django.core.asgi import get_asgi_application
from hypothesis import given
from hypothesis import strategies as st
from openai._streaming import SSEDecoder

from arena import streams
from arena.accounts.models import ApiToken
from arena.generations.models import Generation
from arena.openai_compat import chunks
from arena.openai_compat.errors import OpenAIError, generation_failed
from arena.openai_compat.translate import check_arguments, parse_request, sampling_overrides, translate_messages
from arena.routing import websocket_urlpatterns
from inference import protocol as p
from tests.arena.api_client import api
from tests.arena.socket_client import WebsocketCommunicator

CHAT = "/v1/chat/completions"
HELLO = [{"role": "user", "content": "Hello"}]


def error_of(response, status):
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}, body
    return body["error"]


def raises(fn, *args) -> OpenAIError:
    with pytest.raises(OpenAIError) as info:
        fn(*args)
    assert info.value.status == 400
    return info.value


# --- messages ------------------------------------------------------------------------------
def test_leading_system_messages_become_the_system_prompt_and_earlier_turns_the_history():
    system, history, prompt = translate_messages([
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": [{"type": "text", "text": "Answer in French."}]},
        {"role": "user", "content": "Hi", "name": "alice"},  # a name is ignored
        {"role": "assistant", "content": "Bonjour.", "tool_calls": None, "refusal": None},
        {"role": "user", "content": [{"type": "text", "text": "Capital of"}, {"type": "text", "text": "Italy?"}]},
    ])
    assert system == "Be brief.\n\nAnswer in French."
    assert history == [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Bonjour."}]
    assert prompt == "Capital of\nItaly?"


def test_a_single_user_message_is_the_prompt_alone():
    assert translate_messages(HELLO) == ("", [], "Hello")


@pytest.mark.parametrize("messages,param", [
    (None, "messages"),
    ("Hello", "messages"),
    ([], "messages"),
    (["Hello"], "messages[0]"),
    ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}], "messages[1].role"),
    ([{"role": "system", "content": "Be brief."}], "messages[0].role"),
    ([{"role": "robot", "content": "Hi"}], "messages[0].role"),
    ([{"content": "Hi"}], "messages[0].role"),
    ([{"role": "tool", "content": "42", "tool_call_id": "x"}], "messages[0].role"),
    ([{"role": "user", "content": "Hi"}, {"role": "system", "content": "late"}, {"role": "user", "content": "x"}],
     "messages[1].role"),
    ([{"role": "user", "content": None}], "messages[0].content"),
    ([{"role": "user", "content": 42}], "messages[0].content"),
    ([{"role": "user", "content": "   "}], "messages[0].content"),
    ([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}]}],
     "messages[0].content[1].type"),
    ([{"role": "user", "content": [{"type": "text"}]}], "messages[0].content[0].text"),
    ([{"role": "user", "content": ["plain"]}], "messages[0].content[0]"),
    ([{"role": "assistant", "content": "x", "tool_calls": [{"id": "1"}]}, {"role": "user", "content": "y"}],
     "messages[0].tool_calls"),
])
def test_messages_the_arena_cannot_take_are_a_400_naming_the_place(messages, param):
    err = raises(translate_messages, messages)
    assert err.param == param and err.type == "invalid_request_error"
    assert param.split(".")[0].split("[")[0] in err.message


# --- parameters ------------------------------------------------------------------------------
def test_openai_parameters_map_to_sampling_parameters():
    params, names = sampling_overrides({"temperature": 0, "top_p": 0.5, "max_tokens": 12, "seed": 7, "stop": "END"})
    assert params == {"temperature": 0, "top_p": 0.5, "max_new_tokens": 12, "seed": 7, "stop": ["END"]}
    assert names["max_new_tokens"] == "max_tokens"
    params, names = sampling_overrides({"max_completion_tokens": 5, "stop": ["a", "b"], "temperature": None})
    assert params == {"max_new_tokens": 5, "stop": ["a", "b"]} and names["max_new_tokens"] == "max_completion_tokens"
    assert sampling_overrides({"max_tokens": 5, "max_completion_tokens": 5})[0] == {"max_new_tokens": 5}


@pytest.mark.parametrize("body,param", [
    ({"temperature": 9}, "temperature"),
    ({"temperature": "hot"}, "temperature"),
    ({"temperature": True}, "temperature"),
    ({"top_p": 0}, "top_p"),
    ({"top_p": 1.5}, "top_p"),
    ({"max_tokens": "many"}, "max_tokens"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_completion_tokens": 1e9}, "max_completion_tokens"),
    ({"max_tokens": 2.5}, "max_tokens"),
    ({"max_tokens": 5, "max_completion_tokens": 6}, "max_tokens"),
    ({"seed": -1}, "seed"),
    ({"seed": "abc"}, "seed"),
    ({"stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ({"stop": [""]}, "stop"),
    ({"stop": 3}, "stop"),
])
def test_bad_parameters_are_a_400_naming_the_openai_parameter(body, param):
    err = raises(sampling_overrides, body)
    assert err.param == param and f"'{param}'" in err.message and err.code == "invalid_value"


def test_unknown_arguments_are_refused_harmless_ones_ignored_and_no_ops_accepted_at_their_no_op_value():
    check_arguments({"model": "m", "messages": [], "user": "u-1", "metadata": {"a": "b"}, "store": False,
                     "logprobs": False, "presence_penalty": 0.0, "frequency_penalty": 0, "logit_bias": {},
                     "tools": [], "tool_choice": "none", "response_format": {"type": "text"}, "top_logprobs": None})
    err = raises(check_arguments, {"model": "m", "best_of": 2})
    assert err.message == "Unrecognized request argument supplied: best_of" and err.param == "best_of"
    for body, param in [({"logprobs": True}, "logprobs"), ({"presence_penalty": 0.5}, "presence_penalty"),
                        ({"tools": [{"type": "function"}]}, "tools"), ({"logprobs": 0}, "logprobs")]:
        err = raises(check_arguments, body)
        assert err.param == param and err.code == "unsupported_value"


@pytest.mark.parametrize("body,param", [
    ({"n": 2}, "n"),
    ({"n": "1"}, "n"),
    ({"stream": "yes"}, "stream"),
    ({"stream_options": {"include_usage": True}}, "stream_options"),
    ({"stream": True, "stream_options": {"include_usage": "yes"}}, "stream_options.include_usage"),
    ({"stream": True, "stream_options": {"colour": True}}, "stream_options.colour"),
    ({"model": 5}, "model"),
    ({"model": None}, "model"),
])
def test_request_level_problems(body, param):
    err = raises(parse_request, {"model": "smollm2-135m", "messages": HELLO, **body})
    assert err.param == param


def test_a_whole_request_parses():
    chat = parse_request({"model": "smollm2-135m", "messages": HELLO, "n": 1, "stream": True,
                          "stream_options": {"include_usage": True}, "max_tokens": 4, "user": "x"})
    assert (chat.model, chat.prompt, chat.stream, chat.include_usage) == ("smollm2-135m", "Hello", True, True)
    assert chat.params == {"max_new_tokens": 4}
    assert parse_request({"model": "m", "messages": HELLO}).include_usage is False


# --- chunks ------------------------------------------------------------------------------------
def translator(include_usage=True):
    return chunks.StreamTranslator(id="chatcmpl-1", created=1700000000, model="smollm2-135m",
                                   include_usage=include_usage)


def decode(texts: list[str]) -> list:
    """What the openai client's own SSE decoder makes of our bytes (comments vanish)."""
    return list(SSEDecoder().iter_bytes(iter([t.encode() for t in texts])))


def test_a_streamed_generation_becomes_role_content_finish_usage_then_done():
    t = translator()
    out = []
    for ev in [{"type": p.QUEUED, "position": 2, "waiting": 3, "elapsed_s": 1.0},
               {"type": p.LOADING, "elapsed_s": 3.04, "progress": "loading\nweights"},
               {"type": p.STARTED, "prompt_tokens": 9},
               {"type": p.TOKEN, "text": "Hel", "n": 1}, {"type": p.TOKEN, "text": "", "n": 2},
               {"type": p.TOKEN, "text": "lo", "n": 3},
               {"type": p.DONE, "text": "Hello", "finish_reason": "length",
                "metrics": {"prompt_tokens": 9, "generated_tokens": 3}},
               {"type": p.TOKEN, "text": "late", "n": 4}]:
        out += t.feed(ev)
    assert out[0] == ": queued 2 of 3\n\n"  # waiting for a free slot: a comment keeps the connection alive
    assert out[1] == ": loading 3.0s loading weights\n\n"  # one comment line, newlines folded
    assert out[-1] == "data: [DONE]\n\n" and t.finished
    events = decode(out)
    assert events[-1].data == "[DONE]"
    bodies = [json.loads(e.data) for e in events[:-1]]
    assert all(b["id"] == "chatcmpl-1" and b["object"] == "chat.completion.chunk" and b["model"] == "smollm2-135m"
               and b["created"] == 1700000000 for b in bodies)
    assert bodies[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    deltas = [b["choices"][0]["delta"].get("content") for b in bodies[1:3]]
    assert deltas == ["Hel", "lo"]  # the held-back empty token sends nothing
    assert bodies[3]["choices"][0] == {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "length"}
    assert bodies[4]["choices"] == [] and bodies[4]["usage"] == {
        "prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}
    assert all(b["usage"] is None for b in bodies[:4])


def test_without_include_usage_there_is_no_usage_chunk_and_no_usage_key():
    t = translator(include_usage=False)
    out = t.feed({"type": p.TOKEN, "text": "a", "n": 1}) + t.feed(
        {"type": p.DONE, "text": "a", "finish_reason": "stop", "metrics": {}})
    bodies = [json.loads(e.data) for e in decode(out)[:-1]]
    assert [b["choices"][0]["finish_reason"] for b in bodies] == [None, None, "stop"]
    assert all("usage" not in b for b in bodies)


def test_a_done_event_carrying_more_text_than_was_streamed_sends_the_rest_first():
    t = translator(include_usage=False)
    out = t.feed({"type": p.TOKEN, "text": "Hel", "n": 1}) + t.feed(
        {"type": p.DONE, "text": "Hello!", "finish_reason": "stop", "metrics": {}})
    contents = [json.loads(e.data)["choices"][0]["delta"].get("content") for e in decode(out)[:-1]]
    assert contents == ["", "Hel", "lo!", None]


def token_events(text: str, cuts: list[int]) -> list[dict]:
    """`text` as a worker streams it, cut at `cuts`, each token with its offset (`at`)."""
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(text)}), len(text)]
    return [{"type": p.TOKEN, "text": text[a:b], "n": i, "at": a} for i, (a, b) in enumerate(pairwise(bounds), 1)]


def streamed(out: list[str]) -> str:
    return "".join(json.loads(e.data)["choices"][0]["delta"].get("content") or ""
                   for e in decode(out)[:-1] if json.loads(e.data)["choices"])


def test_a_token_that_never_came_holds_the_rest_back_for_the_final_text():
    """A Redis restarted empty loses the tokens it held: what follows waits for the DONE text (seen
    in the soak: " optimized" missing from a streamed answer whose stored text had it)."""
    t = translator(include_usage=False)
    first, _lost, *after = token_events("a type of RAM that is optimized for CPUs", [17, 20, 30, 34])
    out = t.feed(first)
    assert t.feed(after[0]) == [] and t.feed(after[1]) == []  # past the gap: held
    out += t.feed({"type": p.DONE, "text": "a type of RAM that is optimized for CPUs", "finish_reason": "stop",
                   "metrics": {}})
    assert streamed(out) == "a type of RAM that is optimized for CPUs"


@given(text=st.text(min_size=1, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=12),
       fate=st.lists(st.sampled_from(["sent", "lost", "twice"]), min_size=13, max_size=13))
def test_whatever_tokens_are_lost_or_repeated_the_stream_is_the_final_text(text, cuts, fate):
    t = translator(include_usage=False)
    out: list[str] = []
    for ev, what in zip(token_events(text, cuts), fate, strict=False):  # fate: one per token at most
        if what != "lost":
            out += t.feed(ev) + (t.feed(dict(ev)) if what == "twice" else [])
    out += t.feed({"type": p.DONE, "text": text, "finish_reason": "stop", "metrics": {}})
    assert streamed(out) == text


@pytest.mark.parametrize("ev,code", [
    ({"type": p.FAILED, "reason": "The worker process died (signal 9).", "code": p.WORKER_DIED}, p.WORKER_DIED),
    ({"type": p.FAILED, "reason": "Prompt has 900 tokens; the context is 64.", "code": p.PROMPT_TOO_LONG},
     "context_length_exceeded"),
    ({"type": p.CANCELLED, "text": "partial"}, "cancelled"),
])
def test_a_failure_mid_stream_is_one_error_event_and_the_stream_ends(ev, code):
    t = translator()
    out = t.feed({"type": p.TOKEN, "text": "a", "n": 1}) + t.feed(ev)
    last = json.loads(decode(out)[-1].data)
    assert set(last) == {"error"} and last["error"]["code"] == code and "[DONE]" not in "".join(out)
    assert t.finished and t.feed({"type": p.TOKEN, "text": "b", "n": 2}) == []


def test_failures_map_to_statuses_and_say_whether_a_retry_can_help():
    assert generation_failed(p.PROMPT_TOO_LONG, "too long").status == 400
    died = generation_failed(p.WORKER_DIED, "died")
    assert died.status == 503 and died.type == "server_error" and died.response()["x-should-retry"] == "true"
    load = generation_failed(p.LOAD_FAILED, "could not load")
    assert load.status == 503 and load.response()["x-should-retry"] == "false"
    assert generation_failed("something-new", "").status == 503


@pytest.mark.parametrize(("ours", "openais"), [
    ("stop", "stop"), ("length", "length"), ("stop_sequence", "stop"), ("", "stop")])
def test_finish_reasons_in_openais_words(ours, openais):
    """OpenAI has no stop_sequence: a cut at one of `stop` is "stop" there (our own API tells them apart)."""
    t = translator(include_usage=False)
    out = t.feed({"type": p.DONE, "text": "a", "finish_reason": ours, "metrics": {}})
    assert [json.loads(e.data)["choices"][0]["finish_reason"] for e in decode(out)[:-1]][-1] == openais
    body = chunks.completion(id="c", created=5, model="m", text="a", finish_reason=ours, prompt_tokens=1,
                             completion_tokens=1)
    assert body["choices"][0]["finish_reason"] == openais


def test_a_completion_object():
    body = chunks.completion(id="chatcmpl-9", created=5, model="m", text="Paris", finish_reason="stop",
                             prompt_tokens=10, completion_tokens=2)
    assert body["object"] == "chat.completion" and body["choices"][0]["message"]["content"] == "Paris"
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"] == {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}


# --- views: errors ---------------------------------------------------------------------------
@pytest.mark.django_db
@pytest.mark.parametrize("header", ["", "Bearer nope", "Bearer arena_wrong", "Basic abc", "Bearer "])
def test_a_missing_or_bad_token_is_a_401_in_openai_shape(client, catalogue, header):
    for response in (client.get("/v1/models", HTTP_AUTHORIZATION=header),
                     client.post(CHAT, json.dumps({"model": "smollm2-135m", "messages": HELLO}),
                                 content_type="application/json", HTTP_AUTHORIZATION=header)):
        err = error_of(response, 401)
        assert err["type"] == "authentication_error" and err["code"] == "invalid_api_key"
        assert response["WWW-Authenticate"].startswith("Bearer")
    assert not Generation.objects.exists()


@pytest.mark.django_db
def test_an_inactive_users_token_is_refused(client, catalogue, owner, token):
    owner.is_active = False
    owner.save()
    error_of(api(client, "get", "/v1/models", token), 401)


@pytest.mark.django_db
def test_an_unknown_or_disabled_model_is_a_404_model_not_found(client, token, catalogue):
    catalogue[1].enabled = False
    catalogue[1].save()
    for slug in ("gpt-4o", catalogue[1].slug):
        err = error_of(api(client, "post", CHAT, token, {"model": slug, "messages": HELLO}), 404)
        assert (err["type"], err["param"], err["code"]) == ("invalid_request_error", "model", "model_not_found")
        assert slug in err["message"]
        assert error_of(api(client, "get", f"/v1/models/{slug}", token), 404)["code"] == "model_not_found"
    assert not Generation.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize("extra,param", [
    ({"temperature": 9}, "temperature"),
    ({"temperature": "warm"}, "temperature"),
    ({"top_p": 0}, "top_p"),
    ({"top_p": "x"}, "top_p"),
    ({"max_tokens": -1}, "max_tokens"),
    ({"max_tokens": "12"}, "max_tokens"),
    ({"max_completion_tokens": 100000}, "max_completion_tokens"),
    ({"n": 2}, "n"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}]}, "messages[1].role"),
    ({"messages": [{"role": "wizard", "content": "Hi"}]}, "messages[0].role"),
    ({"frobnicate": True}, "frobnicate"),
    ({"stream_options": {"include_usage": True}}, "stream_options"),
])
def test_bad_requests_are_a_400_naming_the_param_and_create_nothing(client, token, catalogue, extra, param):
    response = api(client, "post", CHAT, token, {"model": "smollm2-135m", "messages": HELLO, **extra})
    err = error_of(response, 400)
    assert err["type"] == "invalid_request_error" and err["param"] == param
    assert not Generation.objects.exists()


@pytest.mark.django_db
def test_a_prompt_over_the_size_limit_is_a_400(client, token, catalogue, settings):
    settings.ARENA_MAX_PROMPT_CHARS = 50
    messages = [{"role": "system", "content": "s" * 30}, {"role": "user", "content": "u" * 30}]
    err = error_of(api(client, "post", CHAT, token, {"model": "smollm2-135m", "messages": messages}), 400)
    assert err["param"] == "messages" and "50" in err["message"]


@pytest.mark.django_db
@pytest.mark.parametrize("raw", ["{not json", "", "[]", "\"text\"", "\xff"])
def test_a_body_that_is_not_a_json_object_is_a_400(client, token, catalogue, raw):
    err = error_of(api(client, "post", CHAT, token, raw=raw), 400)
    assert "JSON" in err["message"] and err["type"] == "invalid_request_error"


@pytest.mark.django_db
def test_wrong_methods_are_a_405_with_allow_and_unknown_paths_a_404(client, token, catalogue):
    response = api(client, "get", CHAT, token)
    assert error_of(response, 405)["type"] == "invalid_request_error" and response["Allow"] == "POST"
    response = client.get(CHAT)  # no token: the method is still what is wrong
    assert response.status_code == 405
    response = api(client, "post", "/v1/models", token, {})
    assert error_of(response, 405) and response["Allow"] == "GET"
    for method in ("get", "post"):
        err = error_of(api(client, method, "/v1/completions", token, {} if method == "post" else None), 404)
        assert "/v1/completions" in err["message"]


@pytest.mark.django_db
def test_models_lists_the_enabled_catalogue_in_openai_format(client, token, catalogue):
    catalogue[2].enabled = False
    catalogue[2].save()
    response = api(client, "get", "/v1/models", token)
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "list"
    assert {m["id"] for m in body["data"]} == {e.slug for e in catalogue if e.enabled}
    for model in body["data"]:
        assert set(model) == {"id", "object", "created", "owned_by"} and model["object"] == "model"
        assert isinstance(model["created"], int) and abs(model["created"] - time.time()) < 600
    one = api(client, "get", "/v1/models/smollm2-135m", token).json()
    assert one["id"] == "smollm2-135m" and one["object"] == "model"


# --- views: a completion over real Redis streams ------------------------------------------------
# Nothing runs the generation here (no Celery worker consumes this test session's queue):
# `play` writes the generation's stream as a worker does, and stores the outcome as the
# task does (Generation.finish), so the view is driven through its real Redis path.
async def wait_generation(owner) -> Generation:
    for _ in range(200):
        gen = await Generation.objects.filter(owner=owner).select_related("model").afirst()
        if gen is not None:
            return gen
        await asyncio.sleep(0.02)
    raise AssertionError("the view created no generation")


def emit(gen, kind, **fields):
    streams.client().xadd(streams.keys().stream(str(gen.id)), p.event(kind, **fields))
    streams.client().expire(streams.keys().stream(str(gen.id)), 60)


async def play(owner, tokens=("Par", "is"), finish="stop"):
    gen = await wait_generation(owner)
    emit(gen, p.LOADING, elapsed_s=1.0, model="SmolLM2", progress="")
    emit(gen, p.STARTED, prompt_tokens=11, queue_s=0.0)
    for n, text in enumerate(tokens, 1):
        await asyncio.sleep(0.01)
        emit(gen, p.TOKEN, text=text, n=n)
    metrics = {"prompt_tokens": 11, "generated_tokens": len(tokens)}
    emit(gen, p.DONE, text="".join(tokens), finish_reason=finish, metrics=metrics)
    await sync_to_async(gen.finish)(Generation.Status.DONE, text="".join(tokens), finish_reason=finish,
                                    metrics=metrics)
    return gen


def asgi_scope(token, method="POST", path=CHAT):
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method, "scheme": "http",
            "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
            "headers": [(b"host", b"testserver"), (b"authorization", f"Bearer {token}".encode()),
                        (b"content-type", b"application/json")],
            "client": ("127.0.0.1", 50000), "server": ("testserver", 80)}


async def asgi_request(token, body: dict) -> ApplicationCommunicator:
    """The request as the ASGI server hands it to Django."""
    comm = ApplicationCommunicator(get_asgi_application(), asgi_scope(token))
    await comm.send_input({"type": "http.request", "body": json.dumps(body).encode(), "more_body": False})
    return comm


async def read_body(comm, until: bytes | None = None, timeout=10) -> tuple[dict, bytes]:
    start = await comm.receive_output(timeout)
    assert start["type"] == "http.response.start"
    body = b""
    while True:
        message = await comm.receive_output(timeout)
        body += message.get("body", b"")
        if not message.get("more_body") or (until and until in body):
            return {**start, "headers": {k.lower(): v for k, v in start["headers"]}}, body


@pytest.fixture
def async_token(owner):
    return ApiToken.issue(owner)


@pytest.mark.django_db(transaction=True)
async def test_a_completion_waits_for_the_end_and_answers_from_the_stored_generation(owner, async_token, catalogue):
    comm = await asgi_request(async_token, {
        "model": "smollm2-135m", "max_tokens": 12, "temperature": 0, "seed": 3, "stop": "\n\n", "user": "ignored",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                     {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Capital of France?"}]})
    gen = await play(owner)
    start, raw = await read_body(comm)
    assert start["status"] == 200, raw
    headers = start["headers"]
    assert headers[b"x-arena-generation-id"] == str(gen.id).encode()
    body = json.loads(raw)
    assert body["id"] == f"chatcmpl-{gen.id}" and body["object"] == "chat.completion"
    assert body["model"] == "smollm2-135m"
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "Paris", "refusal": None}
    assert body["choices"][0]["finish_reason"] == "stop"
    assert body["usage"] == {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}
    stored = await Generation.objects.aget(id=gen.id)
    assert stored.origin == "api" and stored.status == "done" and stored.generated_tokens == 2
    assert stored.system_prompt == "Be brief." and stored.prompt == "Capital of France?"
    assert stored.history == [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
    assert stored.params == {"temperature": 0.0, "top_p": 0.95, "max_new_tokens": 12, "seed": 3, "stop": ["\n\n"]}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("code,status,error_type,param,error_code,retry", [
    (p.LOAD_FAILED, 503, "server_error", None, "load_failed", b"false"),
    (p.WORKER_DIED, 503, "server_error", None, "worker_died", b"true"),
    (p.PROMPT_TOO_LONG, 400, "invalid_request_error", "messages", "context_length_exceeded", None),
])
async def test_a_failed_generation_is_an_openai_error_not_a_500(owner, async_token, catalogue, code, status,
                                                                error_type, param, error_code, retry):
    comm = await asgi_request(async_token, {"model": "smollm2-135m", "messages": HELLO})
    gen = await wait_generation(owner)
    reason = "Something readable went wrong."
    emit(gen, p.FAILED, reason=reason, code=code)
    await sync_to_async(gen.finish)(Generation.Status.FAILED, text="", reason=reason)
    start, raw = await read_body(comm)
    assert start["status"] == status and start["headers"].get(b"x-should-retry") == retry
    assert json.loads(raw)["error"] == {"message": reason, "type": error_type, "param": param, "code": error_code}


@pytest.mark.django_db(transaction=True)
async def test_a_generation_that_ends_without_stream_events_is_answered_from_the_database(
        owner, async_token, catalogue, monkeypatch):
    """The stream is gone (expired) but the generation is stored: the view does not hang."""
    monkeypatch.setattr("arena.openai_compat.views.BLOCK_MS", 100)
    comm = await asgi_request(async_token, {"model": "smollm2-135m", "messages": HELLO, "max_tokens": 3})
    gen = await wait_generation(owner)
    await sync_to_async(gen.finish)(Generation.Status.DONE, text="Hi there", finish_reason="length",
                                    metrics={"prompt_tokens": 4, "generated_tokens": 3})
    start, raw = await read_body(comm)
    body = json.loads(raw)
    assert start["status"] == 200 and body["choices"][0]["message"]["content"] == "Hi there"
    assert body["usage"]["completion_tokens"] == 3 and body["choices"][0]["finish_reason"] == "length"


@pytest.mark.django_db(transaction=True)
async def test_a_streamed_completion_is_sse_chunks_ending_with_done(owner, async_token, catalogue):
    comm = await asgi_request(async_token, {"model": "smollm2-135m", "messages": HELLO, "stream": True,
                                            "stream_options": {"include_usage": True}})
    gen = await play(owner, tokens=("Hel", "lo", " there"), finish="length")
    start, raw = await read_body(comm)
    headers = start["headers"]
    assert start["status"] == 200 and headers[b"content-type"].startswith(b"text/event-stream")
    assert headers[b"cache-control"] == b"no-cache" and headers[b"x-accel-buffering"] == b"no"
    text = raw.decode()
    assert text.startswith(": loading 1.0s\n\n") and text.endswith("data: [DONE]\n\n")
    bodies = [json.loads(e.data) for e in decode([text]) if e.data != "[DONE]"]
    assert {b["id"] for b in bodies} == {f"chatcmpl-{gen.id}"}
    assert "".join(b["choices"][0]["delta"].get("content", "") for b in bodies if b["choices"]) == "Hello there"
    assert bodies[-2]["choices"][0]["finish_reason"] == "length"
    assert bodies[-1]["usage"] == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    assert not streams.client().exists(streams.keys().cancel(str(gen.id)))  # it ended: nothing to cancel


@pytest.mark.django_db(transaction=True)
async def test_a_streaming_client_that_disconnects_cancels_its_generation(owner, async_token, catalogue):
    comm = await asgi_request(async_token, {"model": "smollm2-135m", "messages": HELLO, "stream": True})
    gen = await wait_generation(owner)
    emit(gen, p.STARTED, prompt_tokens=3, queue_s=0.0)
    emit(gen, p.TOKEN, text="Once", n=1)
    _start, raw = await read_body(comm, until=b"Once")
    assert b'"content":"Once"' in raw
    cancel_key = streams.keys().cancel(str(gen.id))
    assert not streams.client().exists(cancel_key)
    await comm.send_input({"type": "http.disconnect"})  # as the server says the socket closed
    await comm.wait(timeout=5)
    assert streams.client().get(cancel_key) == b"client"  # the worker's cue to stop
    streams.client().delete(cancel_key)
    shared = streams.shared()
    assert shared.users == 0 and not shared.hub.watchers  # the cancelled response let the hub go


@pytest.mark.django_db(transaction=True)
async def test_a_completion_that_hears_nothing_for_too_long_is_cancelled_and_a_503(
        owner, async_token, catalogue, monkeypatch, settings):
    monkeypatch.setattr("arena.openai_compat.views.BLOCK_MS", 50)
    settings.ARENA_GENERATION_TIMEOUT_S = -61  # the silence limit (the timeout + 60 s) is up at the first quiet spell
    comm = await asgi_request(async_token, {"model": "smollm2-135m", "messages": HELLO})
    gen = await wait_generation(owner)
    start, raw = await read_body(comm)
    assert start["status"] == 503 and json.loads(raw)["error"]["code"] == p.TIMEOUT
    cancel_key = streams.keys().cancel(str(gen.id))
    assert streams.client().get(cancel_key) == b"timeout"
    streams.client().delete(cancel_key)


@pytest.mark.django_db(transaction=True)
async def test_a_streamed_completion_keeps_the_connection_alive_with_comments_while_nothing_comes(
        owner, async_token, catalogue, monkeypatch):
    monkeypatch.setattr("arena.openai_compat.views.BLOCK_MS", 50)
    comm = await asgi_request(async_token, {"model": "smollm2-135m", "messages": HELLO, "stream": True})
    gen = await wait_generation(owner)
    _start, raw = await read_body(comm, until=b": waiting\n\n: waiting\n\n")
    await play(owner, tokens=("Yes",))
    raw += await read_more(comm)
    text = raw.decode()
    assert text.startswith(": waiting\n\n") and text.endswith("data: [DONE]\n\n")
    bodies = [json.loads(e.data) for e in decode([text]) if e.data != "[DONE]"]
    assert "".join(b["choices"][0]["delta"].get("content", "") for b in bodies) == "Yes"
    assert not streams.client().exists(streams.keys().cancel(str(gen.id)))


@pytest.mark.django_db(transaction=True)
async def test_a_redis_failure_mid_stream_is_the_stream_interrupted_error_chunk(
        owner, async_token, catalogue, monkeypatch):
    async def redis_gone(*args, **kwargs):
        raise ConnectionError("Redis is gone")

    monkeypatch.setattr(streams.shared().client, "xread", redis_gone)  # the hub's reads, this loop's
    comm = await asgi_request(async_token, {"model": "smollm2-135m", "messages": HELLO, "stream": True})
    gen = await wait_generation(owner)
    start, raw = await read_body(comm)
    assert start["status"] == 200
    [event] = decode([raw.decode()])
    assert json.loads(event.data)["error"]["code"] == "stream_interrupted"
    cancel_key = streams.keys().cancel(str(gen.id))
    assert streams.client().get(cancel_key) == b"error"
    streams.client().delete(cancel_key)
    assert streams.shared().users == 0


# --- one hub for the sockets and the completions of a process ------------------------------------
async def read_more(comm, timeout=10) -> bytes:
    """The rest of a response body whose start was read."""
    body = b""
    while True:
        message = await comm.receive_output(timeout)
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def socket_on(gen, user) -> WebsocketCommunicator:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/generations/{gen.id}/?format=json")
    comm.scope["user"] = user
    connected, _ = await comm.connect()
    assert connected
    return comm


async def until(condition, what: str) -> None:
    for _ in range(250):
        if condition():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(f"never: {what}")


@pytest.mark.django_db(transaction=True)
async def test_a_streamed_completion_and_a_socket_on_its_generation_share_one_hub_and_pool(
        owner, async_token, catalogue):
    shared = streams.shared()  # this event loop's: the socket's and the response's
    comm = await asgi_request(async_token, {"model": "smollm2-135m", "messages": HELLO, "stream": True})
    gen = await wait_generation(owner)
    stream = streams.keys().stream(str(gen.id))
    socket = await socket_on(gen, owner)
    await until(lambda: len(shared.hub.watchers.get(stream, ())) == 2, "both follow the stream through the hub")
    assert shared.users == 2
    ours = [c for c in streams.client().client_list() if c.get("name") == shared.client_name]
    assert sum(c.get("cmd") == "xread" for c in ours) <= 1  # one follower for both
    await play(owner, tokens=("Sha", "red"))
    _start, raw = await read_body(comm)
    bodies = [json.loads(e.data) for e in decode([raw.decode()]) if e.data != "[DONE]"]
    assert "".join(b["choices"][0]["delta"].get("content", "") for b in bodies) == "Shared"
    frames = [json.loads(await socket.receive_from(timeout=3)) for _ in range(5)]
    assert [f["type"] for f in frames] == [p.LOADING, p.STARTED, p.TOKEN, p.TOKEN, p.DONE]
    await socket.disconnect()
    assert shared.users == 0 and not shared.hub.watchers
    assert not [c for c in streams.client().client_list() if c.get("name") == shared.client_name]  # pool closed


@pytest.mark.django_db(transaction=True)
async def test_an_expired_stream_of_a_finished_generation_ends_a_completion_and_a_socket_with_the_stored_outcome(
        owner, async_token, catalogue, monkeypatch):
    monkeypatch.setattr("arena.openai_compat.views.BLOCK_MS", 50)
    monkeypatch.setattr("arena.generations.consumers.FOLLOW_BLOCK_MS", 50)
    comm = await asgi_request(async_token, {"model": "smollm2-135m", "messages": HELLO, "stream": True})
    gen = await wait_generation(owner)
    emit(gen, p.STARTED, prompt_tokens=3, queue_s=0.0)
    emit(gen, p.TOKEN, text="Stored", n=1)
    socket = await socket_on(gen, owner)
    assert [json.loads(await socket.receive_from(timeout=3))["type"] for _ in range(2)] == [p.STARTED, p.TOKEN]
    _start, raw = await read_body(comm, until=b'"content":"Stored"')
    # The task stored the end, and the stream went (expired) before anyone read its end.
    await sync_to_async(gen.finish)(Generation.Status.DONE, text="Stored answer", finish_reason="length",
                                    metrics={"prompt_tokens": 3, "generated_tokens": 2})
    streams.client().delete(streams.keys().stream(str(gen.id)))
    text = (raw + await read_more(comm)).decode()
    assert text.endswith("data: [DONE]\n\n")
    bodies = [json.loads(e.data) for e in decode([text]) if e.data != "[DONE]"]
    assert "".join(b["choices"][0]["delta"].get("content", "") for b in bodies) == "Stored answer"
    assert bodies[-1]["choices"][0]["finish_reason"] == "length"
    assert json.loads(await socket.receive_from(timeout=3)) == {
        "type": p.DONE, "text": "Stored answer", "finish_reason": "length",
        "metrics": {"prompt_tokens": 3, "generated_tokens": 2}}
    await socket.disconnect()
    assert not streams.client().exists(streams.keys().cancel(str(gen.id)))  # it ended: nothing to cancel
