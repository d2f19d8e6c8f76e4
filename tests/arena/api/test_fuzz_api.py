"""Fuzz the JSON API from its own OpenAPI description (schemathesis), in-process over WSGI.

The description is fetched from the application (/api/v1/openapi.json) and every operation
is called with a real API token under schemathesis' checks: no 5xx, only documented status
codes, documented content types, bodies that match their schema, 401 without the token,
schema-invalid input refused, and schema-valid input naming real catalogue models accepted.

So that the fuzzer gets past "no such model" and "no such id", half of the schema-valid
bodies name real catalogue models, half of the ids are those of a real generation,
comparison, tournament, suite and suite run (and half of a body's `match` one of its matches,
of its `suite` the real suite), and before
each call every unfinished generation is finished as a worker would, so votes and winner
picks can succeed and tournaments advance. The per-user limits are off (429 is documented
for the operations that start work; test_limits.py tests it).

Bounded for CI: 30 examples per operation, derandomised (the same cases every run).
"""

import copy
import hashlib
import json
import os
import secrets

import pytest
import schemathesis
from django.conf import settings as django_settings
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from schemathesis.specs.openapi.checks import positive_data_acceptance

from arena import jsonbody, streams
from arena.accounts.models import TOKEN_PREFIX, ApiToken
from arena.battles.actions import start_battle
from arena.battles.models import Battle
from arena.catalogue.defaults import DEFAULT_ENTRIES
from arena.catalogue.models import ModelEntry
from arena.generations.models import Generation
from arena.suite_runs import judge
from arena.suite_runs.actions import start_run
from arena.suites import parsing
from arena.tournaments.actions import start_tournament
from arena.tournaments.models import Tournament
from inference.structured import constraint_problem
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import reason_tags, suite

pytestmark = pytest.mark.django_db(transaction=True)
# The same cases every run (CI); ARENA_FUZZ_EXPLORE=1 with --hypothesis-seed=$(date +%Y%m%d) explores
# new ones each day, still reproducible from the seed.
DERANDOMIZE = os.environ.get("ARENA_FUZZ_EXPLORE") != "1"

schema = schemathesis.openapi.from_wsgi("/api/v1/openapi.json", get_wsgi_application())

# 16 enabled models: the default eight (so an 8-contestant tournament can be valid), and each
# again under a system prompt of its own (a contestant is a model *and* how it is served).
SLUGS = [e["slug"] for e in DEFAULT_ENTRIES] + [f"{e['slug']}-terse" for e in DEFAULT_ENTRIES]
SLUG_FIELDS = ("model", "left_model", "right_model", "judge")

# One real token for the whole module: schemathesis builds some cases (its coverage phase) when
# the tests are collected, before any fixture runs, so the token must be known by then.
TOKEN = TOKEN_PREFIX + secrets.token_urlsafe(32)
REAL: dict = {}  # ids of the running test's real objects, by the path segment that names them
REASONS: list[str] = []  # the vote reasons offered (slugs): the only ones a vote's `reasons` may name
FUZZ_TOKEN_ID = 987_654_321


@schema.auth(refresh_interval=None)
class BearerToken:
    """The owner persona's API token on every call; schemathesis still leaves it out (or garbles
    it) where it checks that a call without a valid token is refused."""

    def get(self, case, context):
        return TOKEN

    def set(self, case, data, context):
        case.headers = {**(case.headers or {}), "Authorization": f"Bearer {data}"}


@pytest.fixture
def fuzz_world(owner, catalogue, settings):
    """TOKEN (stored as ApiToken.issue stores one), 16 enabled models, and one generation,
    comparison, tournament, suite and run of it of the owner's, their ids in REAL."""
    settings.ARENA_RATE_LIMIT_PER_MIN = settings.ARENA_MAX_CONCURRENT_PER_USER = 0
    # Far from the ids DELETE /api/v1/tokens/{id} is fuzzed with, so the fuzzer never revokes its own
    # token; a disposable one is the real id it may revoke.
    _secret, disposable = ApiToken.create(owner, name="disposable")
    ApiToken.objects.create(id=FUZZ_TOKEN_ID, user=owner, digest=hashlib.sha256(TOKEN.encode()).hexdigest(),
                            hint=TOKEN[:12])
    terse = [ModelEntry.objects.create(**{**e, "slug": f"{e['slug']}-terse", "system_prompt": "Be terse."})
             for e in DEFAULT_ENTRIES]
    entries = catalogue + terse
    gen = Generation.objects.create(owner=owner, model=entries[0], prompt="Hi", params={})
    sides = {side: {"model": entries[i], "params": {}} for side, i in (("left", 0), ("right", 5))}
    battle = start_battle(owner, prompt="Hi", sides=sides, mode=Battle.Mode.COMPARISON)
    tournament = start_tournament(owner, contestants=entries[:4], prompt="Hi")
    prompts = suite(owner)
    REASONS[:] = reason_tags()
    run = start_run(owner, suite=prompts, contestants=entries[:2])
    REAL.update(generations=str(gen.id), comparisons=str(battle.id), tournaments=str(tournament.id),
                suites=str(prompts.id), matches=list(tournament.matches.values_list("id", flat=True)),
                tokens=disposable.id,
                **{"suite-runs": str(run.id)})
    yield
    REAL.clear()
    drop_queued_tasks()


def drop_queued_tasks():
    """The Celery messages the run's generations queued (no worker consumes this session's queue)."""
    client = streams.client()
    for key in client.scan_iter(match=f"{django_settings.ARENA_REDIS_PREFIX}:celery:*", count=500):
        client.delete(key)


def finish_live_generations():
    """What the workers would do: every generation still queued ends done, with an answer."""
    for gen in Generation.objects.exclude(status__in=Generation.FINISHED):
        gen.finish(Generation.Status.DONE, text="Paris.", finish_reason="stop",
                   metrics={"prompt_tokens": 3, "generated_tokens": 2})


def names_real_models(body) -> bool:
    """Whether every model a body names is in the catalogue (else a schema-valid body is still refused)."""
    if not isinstance(body, dict):
        return True
    named = [body[f] for f in SLUG_FIELDS if body.get(f) is not None]  # a null judge: people judge
    if "contestants" in body:
        named += body["contestants"] if isinstance(body["contestants"], list) else [body["contestants"]]
    if body.get("judges") is not None:  # a suite run's jury
        named += body["judges"] if isinstance(body["judges"], list) else [body["judges"]]
    return all(name in SLUGS for name in named)


def names_known_reasons(body) -> bool:
    """Whether a vote's `reasons` are all on the list offered (else a schema-valid body is still refused)."""
    given = body.get("reasons") if isinstance(body, dict) else None
    return not isinstance(given, list) or all(r in REASONS for r in given)


def usable_suite_prompts(body) -> bool:
    """Whether a suite's prompts pass the checks no schema states (else a schema-valid body is still
    refused): each json_schema a valid JSON Schema, each regex one Python compiles, not both, no NUL,
    and each check (a prompt's, or the suite's defaults) one arena.suites.checks reads."""
    if not isinstance(body, dict) or "prompts" not in body:
        return True
    try:
        parsing.check_defaults(body.get("default_checks"), parsing.api_items(body["prompts"]))
    except parsing.SuiteError:
        return False
    return True


def usable_judge_template(body) -> bool:
    """Whether a suite run's judge template (empty: the default) shows the placeholders it must and
    no others, its braces matched: no schema states it."""
    template = body.get("judge_template") if isinstance(body, dict) else None
    return not (isinstance(template, str) and template and judge.template_problem(template))


def usable_constraints(body) -> bool:
    """Whether the params' json_schema and regex pass the checks no schema states (a valid JSON Schema
    that llguidance can enforce, a regex Python and llguidance compile, not both): else still refused."""
    objects = [body.get(key) for key in ("params", "left_params", "right_params")] if isinstance(body, dict) else []
    if not all(o is None or isinstance(o, dict) for o in objects) or not objects:
        return True
    sides = [{**(objects[0] or {}), **(side or {})} for side in objects[1:]]
    return all(constraint_problem(p.get("json_schema"), p.get("regex")) is None for p in sides)


def storable_text(body) -> bool:
    """Whether no key or string holds what no body may (a NUL, a lone surrogate): the schema's patterns
    say so for every string field, but not for a json_schema's own keys and values, which are free-form."""
    return jsonbody.unstorable_text(body) == ""


def names_run_contestants(case) -> bool:
    """Whether a run comparison's query names no `pair` (a made-up one names no contestant of the
    two runs, so a schema-valid query is still refused)."""
    return not (case.operation.path.endswith("/compare/{earlier_id}") and (case.query or {}).get("pair"))


@schema.hook
def flatmap_case(context, case):
    """Half the time: real models in a schema-valid body, a real object's id in the path, a
    real match in the body; random ones alone only ever meet a 400 or a 404."""
    resource = case.operation.path.split("/")[3]  # /api/v1/<resource>/...

    @st.composite
    def half_real(draw):
        # Not in a negative case: a real id would make a case meant to be refused (a malformed id
        # and an unknown query parameter, which the API ignores) one that must be accepted.
        negative = case.meta is not None and case.meta.generation.mode.is_negative
        if "id" in (case.path_parameters or {}) and resource in REAL and not negative and draw(st.booleans()):
            case.path_parameters = {**case.path_parameters, "id": REAL[resource]}
        body = case.body
        if not isinstance(body, dict) or case.meta is None or case.meta.generation.mode.is_negative:
            return case
        if draw(st.booleans()):
            body = copy.deepcopy(body)
            for name in SLUG_FIELDS:
                if isinstance(body.get(name), str):
                    body[name] = draw(st.sampled_from(SLUGS))
            if isinstance(body.get("contestants"), list):  # a schema-valid number of them (suite runs: 2 to 8)
                body["contestants"] = draw(st.permutations(SLUGS))[:len(body["contestants"])]
            if isinstance(body.get("suite"), str):
                body["suite"] = REAL["suites"]
            if isinstance(body.get("reasons"), list) and REASONS:
                body["reasons"] = draw(st.lists(st.sampled_from(REASONS), max_size=len(body["reasons"])))
            if isinstance(body.get("match"), int) and REAL.get("matches"):
                body["match"] = draw(st.sampled_from(REAL["matches"]))
            case.body = body
        return case

    return half_real()


@schema.parametrize()
@settings(max_examples=30, deadline=None, derandomize=DERANDOMIZE,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
def test_api_conforms(case, fuzz_world):
    finish_live_generations()
    # A made-up Host header meets Django's ALLOWED_HOSTS check (400 DisallowedHost) before any API code:
    # the deployment's host check, not the API's behaviour, so it is not fuzzed here.
    if case.headers:
        case.headers = {name: value for name, value in case.headers.items() if name.lower() != "host"}
    acceptable = all(usable(case.body) for usable in (names_real_models, usable_suite_prompts, usable_constraints,
                                                     usable_judge_template, storable_text, names_known_reasons))
    acceptable = acceptable and names_run_contestants(case)
    excluded = [] if acceptable else [positive_data_acceptance]
    case.call_and_validate(excluded_checks=excluded)


# --- the OpenAI-compatible endpoint, fuzzed with hypothesis ---------------------------------
# Bounded so that no body can start a generation (it would wait for a model): every body that
# names an enabled model carries an out-of-range max_tokens, and the "valid-looking" bodies
# name a model that exists but is disabled (a 404 after everything else was checked). So each
# answer must be a 4xx in OpenAI's error shape, and no generation may exist afterwards.
DISABLED = "smollm2-135m-disabled"
OPENAI_ARGS = ["model", "messages", "n", "stream", "stream_options", "max_tokens", "max_completion_tokens",
               "temperature", "top_p", "seed", "stop", "user", "metadata", "store", "logprobs", "top_logprobs",
               "presence_penalty", "frequency_penalty", "logit_bias", "tools", "tool_choice", "response_format",
               "modalities", "functions", "audio"]
NUMERIC_ARGS = ["temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "n", "top_logprobs"]
HUGE = st.sampled_from([2**31, 2**53 + 1, 2**64, -(2**63), 10**400, -(10**400), 1e308, -1e308, 5e-324])
scalars = (st.none() | st.booleans() | st.integers() | HUGE | st.floats(allow_nan=True, allow_infinity=True)
           | st.text(max_size=20) | st.sampled_from(["", " ", "user", "assistant", "system", "text", "\u202e",
                                                    "\x00", "\x1c"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
part = st.fixed_dictionaries({"type": st.sampled_from(["text", "image_url", "input_audio"]) | values,
                              "text": st.text(max_size=30) | values})
turn = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "developer"]),
                              "content": st.text(max_size=40) | st.lists(part, max_size=2)})
last = st.fixed_dictionaries({"role": st.just("user"), "content": st.text(min_size=1, max_size=40)})
# A request OpenAI's client could send, every argument in range...
valid_request = st.fixed_dictionaries(
    {"model": st.just(DISABLED),
     "messages": st.builds(lambda turns, end: [*turns, end], st.lists(turn, max_size=3), last)},
    optional={"temperature": st.floats(0, 2), "top_p": st.floats(0.01, 1), "max_tokens": st.integers(1, 2048),
              "seed": st.integers(0, 2**32 - 1), "n": st.just(1), "stream": st.just(False), "user": st.text(),
              "stop": st.text(min_size=1, max_size=64) | st.lists(st.text(min_size=1, max_size=64), max_size=4),
              "logprobs": st.just(False), "presence_penalty": st.just(0), "tools": st.just([])})


@st.composite
def bounded_openai_body(draw):
    """...then up to three arguments (or a message's fields) replaced by anything, or dropped."""
    body = draw(valid_request)
    for _ in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(NUMERIC_ARGS) | st.sampled_from(OPENAI_ARGS) | st.text(max_size=12))
        if draw(st.booleans()) and name in body:
            del body[name]
        elif name == "messages" and draw(st.booleans()):
            i = draw(st.integers(0, len(body["messages"]) - 1)) if isinstance(body.get("messages"), list) \
                and body["messages"] else None
            if i is not None:
                field = draw(st.sampled_from(["role", "content", "name", "tool_calls"]))
                body["messages"][i] = {**body["messages"][i], field: draw(values)}
        else:
            body[name] = draw(st.sampled_from(SLUGS) if name == "model" else HUGE | values if name in NUMERIC_ARGS
                              else values | HUGE)
    if body.get("model") in SLUGS:  # an enabled model: make sure a valid rest cannot start it
        body["max_tokens"] = body["max_completion_tokens"] = draw(st.integers(min_value=2049) | HUGE
                                                                  | st.integers(max_value=0))
    return json.dumps(body)  # NaN and Infinity as Python writes them: the server's json.loads reads them


def with_raw(body: dict, name: str, raw_value: str) -> str:
    """`body` as JSON with `name` set to `raw_value` written verbatim (JSON no Python value prints as)."""
    return json.dumps({**body, name: "@RAW@"}).replace('"@RAW@"', raw_value)


HELLO = {"model": DISABLED, "messages": [{"role": "user", "content": "Hi"}]}


def deeply_nested(depth: int, opener: str) -> str:
    return with_raw(HELLO, "messages", opener * depth + "1" + {"[": "]", '{"a":': "}"}[opener] * depth)


junk = st.one_of(
    st.binary(max_size=200),
    st.text(max_size=200),
    values.map(json.dumps),
    st.dictionaries(st.sampled_from(OPENAI_ARGS) | st.text(max_size=12), values).map(json.dumps),
    st.builds(deeply_nested, st.integers(min_value=1, max_value=100_000), st.sampled_from(["[", '{"a":'])),
    st.sampled_from([with_raw(HELLO, "messages", '[{"role": "user", "content": "\\ud800"}]'),
                     with_raw(HELLO, "seed", "9" * 5000),
                     json.dumps({**HELLO, "messages": [{"role": "user", "content": "x" * 3_000_000}]})]),
)


# Mostly near-valid requests (they reach the deepest checks), the rest junk.
raw_openai_body = st.one_of(bounded_openai_body(), bounded_openai_body(), bounded_openai_body(), junk)


@settings(max_examples=200, deadline=None, derandomize=DERANDOMIZE,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(raw=raw_openai_body)
@example(raw=with_raw(HELLO, "temperature", "1" + "0" * 400))  # float() of it overflowed: a 500
@example(raw=json.dumps({**HELLO, "model": "smollm2-135m", "messages": [{"role": "user", "content": "Hi \x00"}],
                         "max_tokens": 9999}))
def test_the_openai_endpoint_answers_any_body_with_an_openai_4xx(client, fuzz_world, catalogue, raw):
    """Arbitrary JSON values, wrong types, huge numbers, deep nesting, unicode, non-JSON, a 3 MB body."""
    if not ModelEntry.objects.filter(slug=DISABLED).exists():
        ModelEntry.objects.create(**{**DEFAULT_ENTRIES[0], "slug": DISABLED, "enabled": False})
    before = Generation.objects.count()  # fuzz_world's
    response = client.post("/v1/chat/completions", data=raw, content_type="application/json",
                           HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert 400 <= response.status_code < 500, (response.status_code, response.content[:300])
    error = response.json()["error"]
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["type"], str) and set(error) == {"message", "type", "param", "code"}
    assert Generation.objects.count() == before


# --- regressions the fuzzer found, as plain examples ---------------------------------------
def test_an_api_url_that_matches_no_route_is_a_json_404(client, token):
    """An id that is not a UUID used to fall through to Django's HTML 404 page."""
    for path in ("/api/v1/generations/null,null", "/api/v1/comparisons/1/vote", "/api/v1/nothing-here",
                 "/api/v1/models/"):
        response = api(client, "post" if path.endswith("vote") else "get", path, token)
        assert response.status_code == 404 and response["Content-Type"] == "application/json"
        assert "No such API URL" in response.json()["error"]["message"]


def test_an_unknown_export_mode_is_refused(client, token):
    """mode=AAA used to be ignored silently: a script asking for one mode got every battle."""
    response = api(client, "get", "/api/v1/export/battles?mode=AAA", token)
    assert response.status_code == 400 and response.json()["error"]["fields"] == {
        "mode": "mode must be one of comparison, tournament, suite, anonymous (or empty: all)."}
    for mode in ("tournament", "anonymous", "suite"):
        assert api(client, "get", f"/api/v1/export/battles?mode={mode}", token).status_code == 200


GOOD = {"/api/v1/generations": {"model": "smollm2-135m", "prompt": "Hi"},
        "/api/v1/comparisons": {"left_model": "smollm2-135m", "right_model": "gemma-3-270m", "prompt": "Hi"},
        "/api/v1/tournaments": {"contestants": [e["slug"] for e in DEFAULT_ENTRIES], "prompt": "Hi"},
        "/v1/chat/completions": {"model": "smollm2-135m", "messages": [{"role": "user", "content": "Hi"}]}}
BIG_INT = "1" + "0" * 4000  # under Python's 4300-digit limit for int(str): parses, then overflows float()


def with_stop(path: str, stop: str) -> str:
    """The good body with a stop sequence (a JSON field that no form checks), raw."""
    body = dict(GOOD[path])
    if path == "/v1/chat/completions":
        body["stop"] = [stop]
    elif path == "/api/v1/comparisons":
        body["left_params"] = {"stop": [stop]}
    else:
        body["params"] = {"stop": [stop]}
    return json.dumps(body)


@pytest.mark.parametrize("path", GOOD)
@pytest.mark.parametrize("raw", [
    pytest.param(lambda path: json.dumps(GOOD[path]).replace('"Hi"', '"Hi \\ud800"'), id="lone-surrogate"),
    pytest.param(lambda path: json.dumps(GOOD[path]).replace('"Hi"', '"Hi \\u0000"'), id="nul"),
    pytest.param(lambda path: with_stop(path, "\x00"), id="nul-in-a-stop-sequence"),
    pytest.param(lambda path: json.dumps(GOOD[path])[:-1] + ', "x": ' + "[" * 50_000 + "]" * 50_000 + "}",
                 id="deep-nesting"),
    pytest.param(lambda path: json.dumps(GOOD[path])[:-1] + ', "x": ' + "9" * 5000 + "}", id="5000-digit-int"),
])
def test_json_no_database_can_store_is_a_400_and_creates_nothing(client, token, catalogue, path, raw):
    """Each of these was a 500 (or, on SQLite, a generation PostgreSQL would have refused): a lone
    surrogate cannot be encoded for any database, PostgreSQL refuses NUL in text and jsonb, and
    json.loads raises RecursionError and a bare ValueError for the last two."""
    from arena.generations.models import Generation

    response = api(client, "post", path, token, raw=raw(path))
    assert response.status_code == 400, response.content[:300]
    assert response["Content-Type"] == "application/json" and response.json()["error"]["message"]
    assert not Generation.objects.exists()


@pytest.mark.parametrize("params", [{"temperature": BIG_INT}, {"top_p": BIG_INT}, {"max_new_tokens": BIG_INT},
                                    {"max_new_tokens": "-" + BIG_INT}, {"seed": BIG_INT}])
def test_a_huge_integer_parameter_is_a_400_naming_it(client, token, catalogue, params):
    """float() of a 4000-digit int raises OverflowError: SamplingParams let it escape as a 500."""
    name, value = next(iter(params.items()))
    raw = with_raw({"model": "smollm2-135m", "prompt": "Hi"}, "params", f'{{"{name}": {value}}}')
    response = api(client, "post", "/api/v1/generations", token, raw=raw)
    assert response.status_code == 400 and name in response.json()["error"]["fields"]
    raw = with_raw({**HELLO, "model": "smollm2-135m"}, {"max_new_tokens": "max_tokens"}.get(name, name), value)
    response = api(client, "post", "/v1/chat/completions", token, raw=raw)
    assert response.status_code == 400 and response.json()["error"]["type"] == "invalid_request_error"


def test_unknown_fields_in_a_winner_or_rerun_body_are_refused(client, token, owner, catalogue):
    """As the create endpoints do; they were ignored, so {"batle": ...} skipped the stale-battle check."""
    t = start_tournament(owner, contestants=catalogue[:4], prompt="Hi")
    match = t.current_match()
    for action, body in (("winner", {"match": match.id, "winner": "left", "batle": "x"}),
                         ("rerun", {"match": match.id, "winner": "left"})):
        response = api(client, "post", f"/api/v1/tournaments/{t.id}/{action}", token, body)
        assert response.status_code == 400 and "Unknown field" in response.json()["error"]["message"]
    assert t.current_match().battle_id == match.battle_id  # nothing was re-run


@pytest.mark.parametrize("query", ["q=%00", "q=Hi%00", "tag=%00", "tag=coding%00", "q=%00&tag=%00"])
def test_a_nul_in_a_search_or_tag_filter_is_ignored(client, token, owner, catalogue, query):
    """On PostgreSQL a NUL in ?q= or ?tag= reached the query and was a DataError 500 (exports and history pages)."""
    Generation.objects.create(owner=owner, model=catalogue[0], prompt="Hi there", params={}, tag="coding")
    for dataset in ("generations", "battles"):
        response = api(client, "get", f"/api/v1/export/{dataset}?{query}", token)
        assert response.status_code == 200
        body = json.loads(b"".join(response.streaming_content))
        assert "\x00" not in json.dumps(body["filters"])
    assert len(body["rows"]) == 0 and len(json.loads(b"".join(api(
        client, "get", f"/api/v1/export/generations?{query}", token).streaming_content))["rows"]) == 1
    client.force_login(owner)
    assert client.get(f"/history/?{query}").status_code == 200


def test_a_nul_in_a_share_token_or_model_slug_in_the_url_is_a_404(client, token, catalogue):
    """/s/%00/ and /v1/models/%00 reached PostgreSQL with the NUL: a DataError 500."""
    assert client.get("/s/%00/").status_code == 404
    response = api(client, "get", "/v1/models/smollm2-135m%00", token)
    assert response.status_code == 404 and response.json()["error"]["code"] == "model_not_found"


# --- states the fuzzer seldom reaches, checked against the same description -------------------
def test_a_finished_tournament_and_the_exports_of_its_battles_match_the_description(client, token, owner, catalogue):
    """The reveal (winner, contestants, every match's models and speeds) and export rows with
    both sides filled: the fuzzer's random picks rarely finish a tournament."""
    t = start_tournament(owner, contestants=catalogue[:4], prompt="Hi", tag="coding")
    while (match := Tournament.objects.get(id=t.id).current_match()) is not None:
        for _side, gen in match.battle.sides:
            gen.finish(Generation.Status.DONE, text="Blue.", finish_reason="stop",
                       metrics={"prompt_tokens": 3, "generated_tokens": 3, "decode_tokens_per_s": 12.5,
                                "first_token_time": gen.created_at.timestamp() + 0.75})
        picked = api(client, "post", f"/api/v1/tournaments/{t.id}/winner", token, {"match": match.id, "winner": "left"})
        assert_conforms(picked.json(), "/api/v1/tournaments/{id}/winner", "post")
    body = api(client, "get", f"/api/v1/tournaments/{t.id}", token).json()
    assert body["state"] == "finished" and body["winner"]["slug"] and len(body["contestants"]) == 4
    assert_conforms(body, "/api/v1/tournaments/{id}")
    for dataset in ("battles", "generations"):
        response = api(client, "get", f"/api/v1/export/{dataset}", token)
        exported = json.loads(b"".join(response.streaming_content))
        assert len(exported["rows"]) == (3 if dataset == "battles" else 0)  # a battle's answers: battles only
        assert_conforms(exported, f"/api/v1/export/{dataset}")
