"""Per-user limits (arena/generations/limits.py) on every surface that starts work, on real Redis (a
prefix of each test's own) and the test database: requests per minute, generations running
at once, request bodies, prompt size and max new tokens. Each refusal names its limit and
says when to retry, and creates nothing.

No model runs: a started generation stays "queued" (its Celery task is only enqueued on
commit, which a test transaction never reaches), which is exactly a live generation; a
test finishes one itself, as the task would."""

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest
import redis
from asgiref.testing import ApplicationCommunicator
from django.contrib.auth import get_user_model
from django.db import close_old_connections, connection, transaction
from django.urls import reverse
from django.utils import timezone

from arena.accounts.models import ApiToken
from arena.battles.models import Battle
from arena.generations import limits
from arena.generations.models import Generation
from arena.tournaments.actions import start_tournament
from arena.tournaments.models import Tournament
from tests.arena.api_client import api
from tests.arena.factories import comparison, finish, finish_battle, play_through

PARAMS = {"temperature": 0.0, "max_new_tokens": 8}
BLIND_PARAMS = {"temperature": 0.7, "max_new_tokens": 8}  # a tournament refuses greedy sampling
CHAT = "/v1/chat/completions"
HELLO = [{"role": "user", "content": "Hello"}]


@pytest.fixture
def limits_set(settings, redis_prefix):
    """set(rate=..., concurrent=..., window=...): the limits for this test, its rate windows
    under a Redis prefix of its own (removed afterwards)."""
    settings.ARENA_REDIS_PREFIX = redis_prefix

    def set_(rate=0, concurrent=0, window=60):
        settings.ARENA_RATE_LIMIT_PER_MIN = rate
        settings.ARENA_MAX_CONCURRENT_PER_USER = concurrent
        settings.ARENA_RATE_LIMIT_WINDOW_S = window

    set_()
    return set_


def tournament(owner, contestants) -> Tournament:
    return start_tournament(owner, contestants=contestants, prompt="Name a colour.", params=BLIND_PARAMS,
                            seeding="given")


def current(t):
    return Tournament.objects.get(id=t.id).current_match()


# --- every surface that starts work --------------------------------------------------------
@dataclass
class Surface:
    """`setup(owner, catalogue)` makes what the action needs (limits off); `act(client, token,
    state)` sends one request that starts work; `kind`: "page", "api" or "openai"."""
    name: str
    kind: str
    act: Callable
    setup: Callable = lambda owner, catalogue: None

    def __repr__(self):
        return self.name


def _page(url_name, data=None, arg=None):
    return lambda client, token, state: client.post(
        reverse(url_name, args=[arg(state)] if arg else None), data(state) if callable(data) else (data or {}))


def _winner_page(client, token, t):
    match = current(t)
    finish_battle(match.battle)
    return client.post(reverse("tournament-winner", args=[t.id]),
                       {"match": match.id, "battle": match.battle_id, "winner": "left"})


def _winner_api(client, token, t):
    match = current(t)
    finish_battle(match.battle)
    return api(client, "post", f"/api/v1/tournaments/{t.id}/winner", token, {"match": match.id, "winner": "left"})


def _stop_then_resume(client, token, t):
    assert client.post(reverse("tournament-stop", args=[t.id])).status_code == 302
    for _side, gen in current(t).battle.sides:  # as the stop's cancel does once committed
        finish(gen, status=Generation.Status.CANCELLED)
    return client.post(reverse("tournament-resume", args=[t.id]))


def _finished_comparison(owner, catalogue):
    return comparison(owner, catalogue[0], catalogue[3], "Hi")


def _chat(client, token, state):
    # stream: the answer starts at once (a plain completion would wait for a worker)
    response = api(client, "post", CHAT, token, {"model": "smollm2-135m", "messages": HELLO, "stream": True,
                                                  "max_tokens": 4})
    return response  # its SSE body is never read: no worker runs here


FOUR = ["smollm2-135m", "smollm2-135m-spec", "gemma-3-270m", "smollm2-135m-awq"]
SURFACES = [
    Surface("playground page", "page", _page("playground", {"model": "smollm2-135m", "prompt": "Hi"})),
    Surface("compare page", "page", _page("compare", {"left_model": "smollm2-135m", "right_model": "gemma-3-270m",
                                                      "prompt": "Hi"})),
    Surface("re-run", "page", _page("battle-rerun", arg=lambda b: b.id), _finished_comparison),
    Surface("swap", "page", _page("battle-swap", arg=lambda b: b.id), _finished_comparison),
    Surface("follow-up", "page", _page("battle-continue", {"prompt": "And then?"}, arg=lambda b: b.id),
            _finished_comparison),
    Surface("tournament page", "page", _page("tournament-new", {
        **{f"contestant_{i + 1}": slug for i, slug in enumerate(FOUR)}, "prompt": "Hi", "seeding": "given"})),
    Surface("tournament re-run", "page", _page("tournament-rerun", lambda t: {"match": current(t).id}, lambda t: t.id),
            lambda owner, catalogue: tournament(owner, catalogue)),
    Surface("tournament resume", "page", _stop_then_resume, lambda owner, catalogue: tournament(owner, catalogue)),
    Surface("tournament replay", "page", _page("tournament-replay", {"prompt": "Name a fruit."}, lambda t: t.id),
            lambda owner, catalogue: play_through(tournament(owner, catalogue))),  # offered once it has ended
    Surface("tournament winner page", "page", _winner_page,
            lambda owner, catalogue: tournament(owner, eight_of(catalogue))),
    Surface("API generation", "api", lambda client, token, state: api(
        client, "post", "/api/v1/generations", token, {"model": "smollm2-135m", "prompt": "Hi", "params": PARAMS})),
    Surface("API comparison", "api", lambda client, token, state: api(
        client, "post", "/api/v1/comparisons", token,
        {"left_model": "smollm2-135m", "right_model": "gemma-3-270m", "prompt": "Hi", "params": PARAMS})),
    Surface("API tournament", "api", lambda client, token, state: api(
        client, "post", "/api/v1/tournaments", token, {"contestants": FOUR, "prompt": "Hi", "params": BLIND_PARAMS})),
    Surface("API tournament re-run", "api", lambda client, token, t: api(
        client, "post", f"/api/v1/tournaments/{t.id}/rerun", token, {"match": current(t).id}),
            lambda owner, catalogue: tournament(owner, catalogue)),
    Surface("API tournament winner", "api", _winner_api,
            lambda owner, catalogue: tournament(owner, eight_of(catalogue))),
    Surface("OpenAI chat completion", "openai", _chat),
]


def eight_of(catalogue):
    """Eight contestants (seven matches: every verdict but the last starts the next match)."""
    return catalogue  # the default catalogue holds eight variants


def refusal(response, kind, limit) -> str:
    """Assert a 429 for `limit` with a Retry-After; the message the user reads."""
    assert response.status_code == 429, response.content[:2000]
    retry = int(response["Retry-After"])
    assert 1 <= retry <= 60
    if kind == "page":
        return response.content.decode()
    error = response.json()["error"]
    assert error["limit"] == limit and error["retry_after_s"] == retry
    if kind == "openai":  # OpenAI's shape, which its client retries after Retry-After
        assert (error["type"], error["code"], error["param"]) == ("requests", "rate_limit_exceeded", None)
        assert response["x-should-retry"] == "true"
    return error["message"]


def started() -> tuple[int, int, int]:
    from arena.tournaments.models import Match

    return Generation.objects.count(), Battle.objects.count(), Match.objects.filter(winner__isnull=False).count()


@pytest.mark.django_db
@pytest.mark.parametrize("surface", SURFACES, ids=repr)
def test_the_request_past_the_rate_limit_is_refused_on_every_surface(client, owner, token, catalogue, limits_set,
                                                                     surface):
    state = surface.setup(owner, catalogue)
    limits_set(rate=2)
    client.force_login(owner)
    for _ in range(2):
        response = surface.act(client, token, state)
        assert response.status_code in (200, 201, 202, 302), response.content[:2000]
    before = started()
    message = refusal(surface.act(client, token, state), surface.kind, limits.REQUESTS_PER_MINUTE)
    assert "2 requests in the last minute (the limit is 2): try again in " in message
    assert started() == before  # nothing started, no verdict kept


@pytest.mark.django_db
@pytest.mark.parametrize("surface", [s for s in SURFACES if "winner" not in s.name and "resume" not in s.name],
                         ids=repr)
def test_too_many_running_generations_are_refused_on_every_surface(client, owner, token, catalogue, limits_set,
                                                                     surface):
    state = surface.setup(owner, catalogue)
    for gen in Generation.objects.filter(status__in=Generation.live_statuses()):
        finish(gen)  # whatever the set-up started has ended
    limits_set(concurrent=4)
    for _ in range(4):
        Generation.objects.create(owner=owner, model=catalogue[0], prompt="busy", params=PARAMS)
    client.force_login(owner)
    before = started()
    message = refusal(surface.act(client, token, state), surface.kind, limits.CONCURRENT_GENERATIONS)
    assert "You have 4 generations running (the limit is 4" in message
    assert "wait for one to finish, or stop one." in message
    assert started() == before


# --- concurrency, in detail ------------------------------------------------------------------
def create(client, token, what="generation"):
    if what == "generation":
        return api(client, "post", "/api/v1/generations", token,
                   {"model": "smollm2-135m", "prompt": "Hi", "params": PARAMS})
    return api(client, "post", "/api/v1/comparisons", token,
               {"left_model": "smollm2-135m", "right_model": "gemma-3-270m", "prompt": "Hi", "params": PARAMS})


@pytest.mark.django_db
def test_a_fifth_generation_waits_for_one_of_four_to_finish(client, token, catalogue, limits_set):
    limits_set(concurrent=4)
    ids = [create(client, token).json()["id"] for _ in range(4)]
    response = create(client, token)
    body = response.json()["error"]
    assert response.status_code == 429 and response["Retry-After"] == str(limits.CONCURRENCY_RETRY_S)
    assert (body["limit"], body["allowed"], body["current"]) == ("concurrent_generations", 4, 4)
    assert Generation.objects.count() == 4
    finish(Generation.objects.get(id=ids[0]))
    assert create(client, token).status_code == 202
    assert create(client, token).status_code == 429
    finish(Generation.objects.get(id=ids[1]), status=Generation.Status.CANCELLED)  # stopping one frees its slot too
    assert create(client, token).status_code == 202


@pytest.mark.django_db
def test_a_comparison_counts_two(client, token, catalogue, limits_set):
    limits_set(concurrent=4)
    ids = [create(client, token).json()["id"] for _ in range(3)]
    response = create(client, token, "comparison")
    assert response.status_code == 429
    message = response.json()["error"]["message"]
    assert "You have 3 generations running (the limit is 4; this needs 2 at once)" in message
    finish(Generation.objects.get(id=ids[0]))
    assert create(client, token, "comparison").status_code == 202
    assert create(client, token).status_code == 429  # 2 + 2 running
    assert Generation.objects.filter(status="queued").count() == 4


@pytest.mark.django_db
def test_alone_a_comparison_runs_even_under_a_limit_of_one(client, token, catalogue, limits_set):
    limits_set(concurrent=1)
    assert create(client, token, "comparison").status_code == 202
    assert create(client, token).status_code == 429


@pytest.mark.django_db
def test_other_users_are_not_affected(client, token, outsider, catalogue, limits_set):
    limits_set(rate=3, concurrent=3)
    for _ in range(3):
        assert create(client, token).status_code == 202
    assert create(client, token).status_code == 429
    other = ApiToken.issue(outsider)
    for _ in range(3):
        assert create(client, other).status_code == 202
    assert create(client, other).status_code == 429


@pytest.mark.django_db
def test_staff_are_exempt_from_both_limits_but_not_from_validation(client, catalogue, limits_set, settings):
    limits_set(rate=2, concurrent=2)
    staff = get_user_model().objects.create_user("operator", password="operator-pass-1", is_staff=True)
    token = ApiToken.issue(staff)
    for _ in range(6):
        assert create(client, token).status_code == 202
    assert Generation.objects.filter(owner=staff, status="queued").count() == 6
    settings.ARENA_MAX_PROMPT_CHARS = 10
    response = api(client, "post", "/api/v1/generations", token, {"model": "smollm2-135m", "prompt": "x" * 11})
    assert response.status_code == 400 and "at most 10 characters" in response.json()["error"]["message"]


@pytest.mark.django_db
def test_a_generation_left_live_by_a_dead_task_stops_counting_after_every_timeout(client, owner, token, catalogue,
                                                                                  limits_set):
    limits_set(concurrent=1)
    gen = Generation.objects.create(owner=owner, model=catalogue[0], prompt="orphan", params=PARAMS,
                                    status=Generation.Status.RUNNING)
    assert create(client, token).status_code == 429
    Generation.objects.filter(id=gen.id).update(
        created_at=timezone.now() - timezone.timedelta(seconds=limits.stale_after_s() + 1))
    assert create(client, token).status_code == 202


@pytest.mark.django_db
def test_a_refused_verdict_keeps_nothing_and_can_be_given_again(client, owner, catalogue, limits_set):
    """Picking a winner starts the next match: refused, the verdict is not kept half-way."""
    t = tournament(owner, eight_of(catalogue))
    match = current(t)
    finish_battle(match.battle)
    for _ in range(3):
        Generation.objects.create(owner=owner, model=catalogue[0], prompt="busy", params=PARAMS)
    limits_set(concurrent=4)
    client.force_login(owner)
    url = reverse("tournament-winner", args=[t.id])
    response = client.post(url, {"match": match.id, "battle": match.battle_id, "winner": "right"})
    assert response.status_code == 429 and "You have 3 generations running" in response.content.decode()
    assert 'id="tournament-error"' in response.content.decode()
    match.refresh_from_db()
    match.battle.refresh_from_db()
    assert match.winner is None and not match.battle.outcome and current(t).id == match.id
    Generation.objects.filter(prompt="busy").update(status=Generation.Status.DONE)
    assert client.post(url, {"match": match.id, "battle": match.battle_id, "winner": "right"}).status_code == 302
    match.refresh_from_db()
    assert match.winner == match.battle.right.model and current(t).battle is not None


@pytest.mark.django_db(transaction=True)
def test_racing_starts_cannot_both_take_the_last_slot(owner, catalogue, limits_set):
    """Threads stand in for web processes (each its own connection): with 3 of 4 running,
    8 starts at once let exactly one through."""
    limits_set(concurrent=4)
    for _ in range(3):
        Generation.objects.create(owner=owner, model=catalogue[0], prompt="busy", params=PARAMS)
    barrier, outcomes = threading.Barrier(8), []

    def start(i):
        try:
            barrier.wait(timeout=30)
            with transaction.atomic():  # as start_generation does, without enqueuing a task
                limits.check_start(owner, cost=1)
                Generation.objects.create(owner=owner, model=catalogue[0], prompt=f"racer {i}", params=PARAMS)
            outcomes.append("started")
        except limits.LimitExceeded:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=start, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    close_old_connections()
    assert sorted(outcomes) == ["refused"] * 7 + ["started"]
    assert Generation.objects.filter(prompt__startswith="racer").count() == 1


# --- the rate window, in detail --------------------------------------------------------------
@pytest.mark.django_db
def test_the_window_frees_after_its_time(client, token, catalogue, limits_set):
    limits_set(rate=1, window=1)
    assert create(client, token).status_code == 202
    response = create(client, token)
    assert response.status_code == 429 and response["Retry-After"] == "1"
    assert response.json()["error"]["message"] == "1 request in the last 1 s (the limit is 1): try again in 1 s."
    time.sleep(1.05)
    assert create(client, token).status_code == 202


@pytest.mark.django_db
def test_retry_after_is_when_the_oldest_request_leaves_the_window(client, owner, token, catalogue, limits_set,
                                                                    redis_client):
    limits_set(rate=3)
    seconds, micros = redis_client.time()
    now_ms = seconds * 1000 + micros // 1000
    key = limits.rate_key(owner)
    redis_client.zadd(key, {"a": now_ms - 50_000, "b": now_ms - 30_000, "c": now_ms - 1_000})  # requests made earlier
    response = create(client, token)
    assert response.status_code == 429 and response.json()["error"]["current"] == 3
    assert int(response["Retry-After"]) in (10, 11)  # when "a" is a minute old
    redis_client.zadd(key, {"a": now_ms - 61_000})  # a's minute has passed
    assert create(client, token).status_code == 202
    assert 0 < redis_client.pttl(key) <= 60_000  # the window's key expires by itself
    assert create(client, token).status_code == 429


@pytest.mark.django_db
def test_refused_and_invalid_requests_do_not_count(client, token, catalogue, limits_set):
    limits_set(rate=2)
    for _ in range(3):
        assert api(client, "post", "/api/v1/generations", token, {"model": "nope", "prompt": "Hi"}).status_code == 400
    assert create(client, token).status_code == 202
    assert create(client, token).status_code == 202
    for _ in range(3):
        assert create(client, token).status_code == 429
    assert Generation.objects.count() == 2


def test_concurrent_checks_let_exactly_the_limit_through(settings, redis_prefix):
    """The Lua script checks and records in one step: 40 requests at once, 10 accepted."""
    settings.ARENA_REDIS_PREFIX = redis_prefix
    settings.ARENA_RATE_LIMIT_PER_MIN, settings.ARENA_RATE_LIMIT_WINDOW_S = 10, 60
    user = get_user_model()(pk=424242, username="racer")
    barrier, outcomes = threading.Barrier(40), []

    def check():
        barrier.wait(timeout=30)
        try:
            limits._check_rate(user)
            outcomes.append(True)
        except limits.LimitExceeded:
            outcomes.append(False)

    threads = [threading.Thread(target=check) for _ in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert outcomes.count(True) == 10 and outcomes.count(False) == 30


def test_without_redis_the_rate_limit_lets_requests_through(settings, redis_prefix, monkeypatch):
    """It protects the service; it must not be what takes it down when Redis restarts."""
    settings.ARENA_REDIS_PREFIX = redis_prefix
    settings.ARENA_RATE_LIMIT_PER_MIN = 1
    dead = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)  # nothing listens on port 1
    monkeypatch.setattr("arena.streams.client", lambda: dead)
    user = get_user_model()(pk=434343, username="offline")
    limits._check_rate(user)
    limits._check_rate(user)


# --- the pages: the form comes back, with the reason -----------------------------------------
@pytest.mark.django_db
def test_the_playground_shows_the_form_again_with_the_refusal(client, owner, catalogue, limits_set):
    limits_set(rate=1)
    client.force_login(owner)
    data = {"model": "smollm2-135m", "prompt": "Tell me a story", "max_new_tokens": "16"}
    assert client.post(reverse("playground"), data).status_code == 302
    page = client.post(reverse("playground"), data)
    html = page.content.decode()
    assert page.status_code == 429 and "1 request in the last minute (the limit is 1): try again in" in html
    assert "Tell me a story" in html and 'value="16"' in html  # what was typed is kept
    htmx = client.post(reverse("playground"), data, headers={"HX-Request": "true"})
    assert htmx.status_code == 429 and htmx["HX-Retarget"] == "#playground-form"
    assert "<html" not in htmx.content.decode()
    assert "the limit is 1" in htmx.content.decode() and int(htmx["Retry-After"]) >= 1


@pytest.mark.django_db
def test_read_only_pages_and_polling_are_not_limited(client, owner, token, catalogue, limits_set):
    limits_set(rate=1)
    client.force_login(owner)
    gen_id = create(client, token).json()["id"]
    for _ in range(5):
        assert client.get(reverse("playground")).status_code == 200
        assert client.get(f"/g/{gen_id}/").status_code == 200
        assert api(client, "get", f"/api/v1/generations/{gen_id}", token).status_code == 200
        assert api(client, "get", "/v1/models", token).status_code == 200
    assert create(client, token).status_code == 429


# --- request bodies ----------------------------------------------------------------------------
HUGE = 50 * 2**20


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/api/v1/generations", "/api/v1/comparisons", "/api/v1/tournaments", CHAT])
def test_a_huge_json_body_is_a_413_not_parsed(client, token, catalogue, path):
    raw = json.dumps({"model": "smollm2-135m", "prompt": "x" * HUGE, "messages": HELLO})
    response = api(client, "post", path, token, raw=raw)
    assert response.status_code == 413, response.content[:500]
    error = response.json()["error"]
    assert "larger than the limit of 1048576 bytes" in error["message"]
    if path == CHAT:
        assert (error["type"], error["code"]) == ("invalid_request_error", "request_too_large")
    assert not Generation.objects.exists()


def asgi_post(path, headers, chunks):
    """POST through the application uvicorn runs (arena.asgi), sending the body in `chunks`;
    the response's status, headers and body, and how many chunks were sent before it came."""
    from arena.asgi import application

    async def go():
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
                 "headers": [(b"host", b"127.0.0.1"), *headers], "client": ("127.0.0.1", 5000),
                 "server": ("127.0.0.1", 80)}
        comm = ApplicationCommunicator(application, scope)
        sent = 0
        for i, chunk in enumerate(chunks):
            await comm.send_input({"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1})
            sent += 1
            await asyncio.sleep(0.01)
            if not comm.output_queue.empty():
                break
        start = await comm.receive_output(10)
        body = (await comm.receive_output(10)).get("body", b"")
        await comm.wait(10)
        return start["status"], dict(start["headers"]), body, sent

    return asyncio.run(go())


def test_the_server_refuses_an_oversized_body_by_its_length_before_reading_it():
    status, headers, body, sent = asgi_post(CHAT, [(b"content-length", str(HUGE).encode()),
                                                   (b"content-type", b"application/json")], [b"{"] * 5)
    assert status == 413 and sent == 1 and headers[b"content-type"] == b"application/json"
    assert json.loads(body)["error"]["code"] == "request_too_large"


def test_the_server_refuses_a_chunked_body_once_it_passes_the_limit():
    chunk = b"x" * 2**18  # 256 KiB: the fifth passes 1 MiB
    status, headers, body, sent = asgi_post("/playground/", [(b"content-type", b"text/plain")], [chunk] * 40)
    assert status == 413 and sent == 5 and b"larger than the limit" in body
    assert headers[b"content-type"].startswith(b"text/plain")


def test_a_body_within_the_limit_reaches_the_application():
    status, _headers, body, _sent = asgi_post("/v1/models", [(b"content-length", b"2")], [b"{}"])
    assert status == 405 and json.loads(body)["error"]["code"] == "method_not_allowed"


# --- prompt size and max new tokens: named on every surface ----------------------------------
@pytest.fixture
def small_prompts(settings):
    settings.ARENA_MAX_PROMPT_CHARS = 20
    return "x" * 21


@pytest.mark.django_db
def test_an_over_long_prompt_names_the_limit_on_every_page(client, owner, catalogue, small_prompts):
    client.force_login(owner)
    battle = _finished_comparison(owner, catalogue)
    t = play_through(tournament(owner, catalogue))  # a replay is offered once it has ended
    long = small_prompts
    posts = [
        (reverse("playground"), {"model": "smollm2-135m", "prompt": long}),
        (reverse("playground"), {"model": "smollm2-135m", "prompt": "Hi", "system_prompt": long}),
        (reverse("compare"), {"left_model": "smollm2-135m", "right_model": "gemma-3-270m", "prompt": long}),
        (reverse("compare"), {"left_model": "smollm2-135m", "right_model": "gemma-3-270m", "prompt": "Hi",
                              "right_system_prompt": long}),
        (reverse("battle-continue", args=[battle.id]), {"prompt": long}),
        (reverse("tournament-new"), {**{f"contestant_{i + 1}": s for i, s in enumerate(FOUR)}, "prompt": long}),
        (reverse("tournament-new"), {**{f"contestant_{i + 1}": s for i, s in enumerate(FOUR)}, "prompt": "Hi",
                                     "system_prompt": long}),
        (reverse("tournament-replay", args=[t.id]), {"prompt": long}),
    ]
    before = started()
    for url, data in posts:
        response = client.post(url, data)
        assert response.status_code == 400, (url, data)
        assert "at most 20 characters (it has 21)" in response.content.decode(), (url, data)
    assert started() == before


@pytest.mark.django_db
def test_too_many_new_tokens_names_the_limit_on_every_page(client, owner, catalogue):
    client.force_login(owner)
    t = play_through(tournament(owner, catalogue))
    posts = [
        (reverse("playground"), {"model": "smollm2-135m", "prompt": "Hi", "max_new_tokens": "5000"}),
        (reverse("compare"), {"left_model": "smollm2-135m", "right_model": "gemma-3-270m", "prompt": "Hi",
                              "max_new_tokens": "5000"}),
        (reverse("tournament-new"), {**{f"contestant_{i + 1}": s for i, s in enumerate(FOUR)}, "prompt": "Hi",
                                     "max_new_tokens": "5000"}),
        (reverse("tournament-replay", args=[t.id]), {"prompt": "Hi", "max_new_tokens": "5000"}),
    ]
    before = started()
    for url, data in posts:
        response = client.post(url, data)
        assert response.status_code == 400 and "less than or equal to 2048" in response.content.decode(), url
    assert started() == before


@pytest.mark.django_db
@pytest.mark.parametrize("path,body", [
    ("/api/v1/generations", {"model": "smollm2-135m"}),
    ("/api/v1/comparisons", {"left_model": "smollm2-135m", "right_model": "gemma-3-270m"}),
    ("/api/v1/tournaments", {"contestants": FOUR}),
])
def test_the_api_names_the_prompt_and_token_limits(client, token, catalogue, small_prompts, path, body):
    for extra, field in [({"prompt": small_prompts}, "prompt"),
                         ({"prompt": "Hi", "system_prompt": small_prompts}, "system_prompt"),
                         ({"prompt": "Hi", "params": {"max_new_tokens": 5000}}, "max_new_tokens")]:
        if "left_model" in body and field == "system_prompt":
            extra, field = {"prompt": "Hi", "left_system_prompt": small_prompts}, "left_system_prompt"
        response = api(client, "post", path, token, {**body, **extra})
        assert response.status_code == 400, response.content
        error = response.json()["error"]
        limit = "between 1 and 2048" if field == "max_new_tokens" else "at most 20 characters (it has 21)"
        assert field in error["message"] and limit in error["message"], error
    assert not Generation.objects.exists()


@pytest.mark.django_db
def test_the_api_counts_a_tournaments_history_into_the_prompt_limit(client, token, catalogue, settings):
    settings.ARENA_MAX_PROMPT_CHARS = 20
    history = [{"role": "user", "content": "x" * 10}, {"role": "assistant", "content": "y" * 10}]
    response = api(client, "post", "/api/v1/tournaments", token,
                   {"contestants": FOUR, "prompt": "Hi", "history": history})
    assert response.status_code == 400
    assert "22 characters in all, at most 20" in response.json()["error"]["message"]
    assert not Tournament.objects.exists()


@pytest.mark.django_db
def test_the_openai_api_names_the_prompt_and_token_limits(client, token, catalogue, small_prompts):
    messages = [{"role": "system", "content": "s" * 15}, {"role": "user", "content": "u" * 15}]
    response = api(client, "post", CHAT, token, {"model": "smollm2-135m", "messages": messages})
    error = response.json()["error"]
    assert response.status_code == 400 and error["param"] == "messages" and "at most 20 allowed" in error["message"]
    response = api(client, "post", CHAT, token, {"model": "smollm2-135m", "messages": HELLO, "max_tokens": 5000})
    error = response.json()["error"]
    assert response.status_code == 400 and error["param"] == "max_tokens" and "2048" in error["message"]
    assert not Generation.objects.exists()
