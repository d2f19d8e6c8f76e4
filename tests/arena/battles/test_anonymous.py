"""Anonymous battles (/arena/ and /api/v1/arena): the app draws the pair (exclusions, memory,
warmth from the orchestrator's snapshot), both sides blind until the vote (page, API, the
owner's staff pages), then names, speeds and the pick's reason; follow-ups stay blind; the
leaderboard's own mode and its default. No model runs here: the battle task is only enqueued;
tests/live/test_anonymous_browser.py runs it for real."""

import json
import random

import pytest
from django.urls import reverse

from arena import streams
from arena.battles import actions, anonymous
from arena.battles.actions import vote
from arena.battles.models import ArenaExclusion, Battle
from arena.battles.secrecy import secret_slugs
from arena.catalogue.models import ModelEntry
from arena.generations.models import Generation
from inference.protocol import SamplingParams
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import finish_battle, identifiers, leaderboard_order, verdict

pytestmark = pytest.mark.django_db
PAIR = ("smollm2-135m-llamacpp", "gemma-3-270m-llamacpp")


@pytest.fixture
def only_pair(catalogue):
    """Every entry but PAIR excluded from the draw; PAIR's base model (Gemma) let into chat draws by
    staff, so the two sides are of two families."""
    for m in catalogue:
        if m.slug not in PAIR:
            ArenaExclusion.objects.create(model=m, reason="too slow for tests")
    ModelEntry.objects.filter(slug__in=PAIR, base=True).update(in_chat_draws=True)
    return list(ModelEntry.objects.filter(slug__in=PAIR))


@pytest.fixture
def snapshot(redis_client):
    """Writes an orchestrator status snapshot (as the orchestrator publishes it) for the test."""
    key = streams.keys().orchestrator_status()

    def write(budget_mb, warm=()):
        nodes = [{"node": "local", "name": "local", "alive": True, "budget_mb": budget_mb, "reserved_mb": 0}]
        workers = [{"worker_id": f"{s}-0a1b2c3d", "slug": s, "state": "ready"} for s in warm]
        streams.client().set(key, json.dumps({"at": 0, "nodes": nodes, "workers": workers}))

    yield write
    streams.client().delete(key)


def start(client, prompt="Name a colour.", **data):
    return client.post(reverse("arena"), {"prompt": prompt, **data})


def test_the_arena_draws_two_different_models_and_starts_a_blind_battle(client, owner, only_pair):
    client.force_login(owner)
    response = start(client, max_new_tokens="12")
    battle = Battle.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/arena/{battle.id}/"
    assert battle.mode == "anonymous" and battle.blind and not battle.revealed
    assert {battle.left.model.slug, battle.right.model.slug} == set(PAIR)
    assert battle.pick_reason in ("random", "least_settled")
    for _side, gen in battle.sides:
        assert gen.params["max_new_tokens"] == 12 and gen.params["temperature"] >= anonymous.MIN_TEMPERATURE
        assert isinstance(gen.params["seed"], int)
    assert client.get(reverse("battle-detail", args=[battle.id]))["Location"] == f"/arena/{battle.id}/"


def test_no_pair_is_refused_with_a_reason(client, owner, catalogue):
    for m in catalogue[1:]:
        ArenaExclusion.objects.create(model=m)
    client.force_login(owner)
    response = start(client)
    assert response.status_code == 400 and b"No two catalogue models can meet" in response.content
    assert not Battle.objects.exists()


def test_the_draw_keeps_to_the_largest_node_budget_and_prefers_warm_models(owner, catalogue, snapshot):
    snapshot(1500)  # only the llama.cpp entries (400, 400, 700, 700) and AWQ (600) fit two at a time
    fits = {m.slug for m in catalogue if m.memory_estimate_mb <= 1100}
    for seed in range(40):
        pick = anonymous.pick(random.Random(seed))
        mb = {m.slug: m.memory_estimate_mb for m in catalogue}
        assert mb[pick.left] + mb[pick.right] <= 1500 and {pick.left, pick.right} <= fits
    snapshot(100_000, warm=("smollm2-135m", "smollm2-135m-awq"))
    least = [anonymous.pick(random.Random(s)) for s in range(200)]
    settled = {frozenset((p.left, p.right)) for p in least if p.reason == "least_settled"}
    assert settled == {frozenset(("smollm2-135m", "smollm2-135m-awq"))}  # no verdicts: all equal, these two warm


def test_the_page_names_nobody_until_the_vote_then_shows_names_speeds_and_reason(client, owner, only_pair):
    client.force_login(owner)
    start(client)
    battle = Battle.objects.get()
    secret = identifiers(only_pair)
    page = client.get(f"/arena/{battle.id}/").content.decode()
    assert "Model A" in page and "Model B" in page
    assert not [w for w in secret if w.lower() in page.lower()]
    assert secret_slugs(owner) >= set(PAIR)
    battle = finish_battle(battle)
    page = client.get(f"/arena/{battle.id}/").content.decode()
    assert not [w for w in secret if w.lower() in page.lower()] and 'data-metric="tps"' not in page
    assert secret_slugs(owner) >= set(PAIR)  # both answers ended, but the verdict is still to come
    assert 'name="outcome" value="left"' in page and "least settled" not in page and "at random" not in page

    response = client.post(f"/arena/{battle.id}/vote", {"outcome": "right"})
    assert response.status_code == 302
    battle.refresh_from_db()
    assert battle.revealed and battle.outcome == "right"
    page = client.get(f"/arena/{battle.id}/").content.decode()
    assert battle.left.model.name in page and battle.right.model.name in page
    assert f"{battle.right.model.name} is better" in page
    assert anonymous.REASON_WORDS[battle.pick_reason] in page and 'data-metric="tps">12.5<' in page  # speeds
    assert not secret_slugs(owner) & set(PAIR)
    again = client.post(f"/arena/{battle.id}/vote", {"outcome": "left"})
    assert again.status_code == 409
    battle.refresh_from_db()
    assert battle.outcome == "right"


def test_a_follow_up_stays_blind_with_the_same_pair_and_its_vote_reveals_both_turns(client, owner, only_pair):
    client.force_login(owner)
    start(client)
    first = finish_battle(Battle.objects.get())
    response = client.post(f"/arena/{first.id}/continue", {"prompt": "And another?"})
    second = Battle.objects.exclude(id=first.id).get()
    assert response["Location"] == f"/arena/{second.id}/"
    assert second.parent_id == first.id and second.blind and second.mode == "anonymous"
    assert second.pick_reason == first.pick_reason
    assert [s[1].model_id for s in second.sides] == [s[1].model_id for s in first.sides]
    assert second.left.history[-1] == {"role": "assistant", "content": "Blue."}
    assert client.post(f"/arena/{first.id}/vote", {"outcome": "tie"}).status_code == 409  # judge the latest
    finish_battle(second)
    assert client.post(f"/arena/{second.id}/vote", {"outcome": "tie"}).status_code == 302
    first.refresh_from_db()
    assert first.revealed and not first.outcome  # named now, but only the latest turn's verdict counts
    assert client.post(f"/arena/{second.id}/continue", {"prompt": "More?"}).status_code == 400


def test_the_api_hides_the_pair_until_the_vote(client, token, only_pair):
    response = api(client, "post", "/api/v1/arena", token, {"prompt": "Name a colour.", "max_new_tokens": 8})
    assert response.status_code == 202, response.content
    assert_conforms(response.json(), "/api/v1/arena", "post", 202)
    body = response.json()
    secret = identifiers(only_pair)
    assert body["pick_reason"] is None and "model" not in body["left"] and "metrics" not in body["right"]
    assert not [w for w in secret if w.lower() in response.content.decode().lower()]
    battle = finish_battle(Battle.objects.get(id=body["id"]))
    read = api(client, "get", f"/api/v1/arena/{battle.id}", token)
    assert_conforms(read.json(), "/api/v1/arena/{id}", "get")
    assert read.json()["can_vote"] and not [w for w in secret if w.lower() in read.content.decode().lower()]
    voted = api(client, "post", f"/api/v1/arena/{battle.id}/vote", token, {"outcome": "left"})
    assert voted.status_code == 200
    assert_conforms(voted.json(), "/api/v1/arena/{id}/vote", "post")
    body = voted.json()
    assert {body["left"]["model"], body["right"]["model"]} == set(PAIR)
    assert body["left"]["metrics"]["tokens_per_s"] == 12.5 and body["pick_reason"] in ("random", "least_settled")
    assert api(client, "post", f"/api/v1/arena/{battle.id}/vote", token, {"outcome": "right"}).status_code == 409
    assert api(client, "get", "/api/v1/comparisons/" + str(battle.id), token).status_code == 404


@pytest.mark.parametrize("value", [True, "8", 8.5])
def test_the_api_refuses_a_length_that_is_not_a_whole_number(client, token, only_pair, value):
    response = api(client, "post", "/api/v1/arena", token, {"prompt": "Name a colour.", "max_new_tokens": value})
    assert response.status_code == 400 and response.json()["error"]["fields"] == {
        "max_new_tokens": "must be a whole number"}
    assert not Battle.objects.exists()


def test_the_api_reads_a_null_length_as_the_battles_default_and_refuses_one_over_the_limit(client, token, only_pair):
    """As every other endpoint's params (and the OpenAPI schema, shared with them) say."""
    null = api(client, "post", "/api/v1/arena", token, {"prompt": "Hi.", "max_new_tokens": None})
    assert null.status_code == 202 and null.json()["max_new_tokens"] == 256  # ARENA_BLIND_MAX_NEW_TOKENS
    whole = api(client, "post", "/api/v1/arena", token, {"prompt": "Hi.", "max_new_tokens": 16.0})
    assert whole.status_code == 202 and Battle.objects.get(id=whole.json()["id"]).left.params["max_new_tokens"] == 16
    limit = int(SamplingParams.LIMITS["max_new_tokens"][1])
    over = api(client, "post", "/api/v1/arena", token, {"prompt": "Hi.", "max_new_tokens": limit + 1})
    assert over.status_code == 400 and "max_new_tokens" in over.json()["error"]["fields"]


def test_the_api_continues_an_unjudged_battle(client, token, owner, only_pair):
    body = api(client, "post", "/api/v1/arena", token, {"prompt": "Name a colour."}).json()
    early = api(client, "post", f"/api/v1/arena/{body['id']}/continue", token, {"prompt": "More?"})
    assert early.status_code == 409
    finish_battle(Battle.objects.get(id=body["id"]))
    nxt = api(client, "post", f"/api/v1/arena/{body['id']}/continue", token, {"prompt": "More?"})
    assert nxt.status_code == 202 and nxt.json()["parent"] == body["id"]
    assert_conforms(nxt.json(), "/api/v1/arena/{id}/continue", "post", 202)


def test_another_user_cannot_see_or_vote(client, owner, outsider, only_pair):
    client.force_login(owner)
    start(client)
    battle = finish_battle(Battle.objects.get())
    client.force_login(outsider)
    assert client.get(f"/arena/{battle.id}/").status_code == 404
    assert client.post(f"/arena/{battle.id}/vote", {"outcome": "left"}).status_code == 404


def test_the_leaderboard_opens_on_every_verdict_and_shows_anonymous_battles_alone_on_request(
        client, owner, catalogue):
    smol, gemma = ModelEntry.objects.get(slug=PAIR[0]), ModelEntry.objects.get(slug=PAIR[1])
    for _ in range(3):
        verdict(owner, smol, gemma, "right")  # named comparisons: gemma ahead
    client.force_login(owner)
    battle = finish_battle(actions.start_anonymous(owner, prompt="Hi", rng=random.Random(3)))
    left, right = battle.left.model.slug, battle.right.model.slug
    assert vote(battle, "left")
    page = client.get(reverse("leaderboard")).content.decode()
    assert "4 verdicts</strong>: 3 from" in page  # the default counts every kind, each named
    assert set(leaderboard_order(page)) == {left, right, smol.slug, gemma.slug}
    alone = client.get(reverse("leaderboard") + "?kind=anonymous").content.decode()
    assert leaderboard_order(alone) == [left, right]  # only the anonymous verdict counts in this view
    named = client.get(reverse("leaderboard") + "?kind=comparison").content.decode()
    assert leaderboard_order(named) == [gemma.slug, smol.slug]
    blind = client.get(reverse("leaderboard") + "?kind=tournament").content.decode()
    assert leaderboard_order(blind) == []  # tournament matches only


# --- fair conditions: one token limit, the same stop rules, no base model in a chat draw -------------

@pytest.fixture
def unequal(only_pair):
    """PAIR with defaults that would cut their answers at different lengths (as Gemma's 128 against
    SmolLM2's 256 did), and a stop sequence on one side only."""
    smol, gemma = (ModelEntry.objects.get(slug=slug) for slug in PAIR)
    smol.default_params = {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 256}
    gemma.default_params = {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 128, "stop": ["\n\n"]}
    for m in (smol, gemma):
        m.save(update_fields=["default_params"])
    return smol, gemma


def sides_params(battle) -> list[dict]:
    return [gen.params for _side, gen in battle.sides]


def test_the_page_gives_both_sides_one_limit_and_no_stop_of_one_sides_own(client, owner, unequal, settings):
    settings.ARENA_BLIND_MAX_NEW_TOKENS = 192
    client.force_login(owner)
    start(client)
    battle = Battle.objects.get()
    assert [p["max_new_tokens"] for p in sides_params(battle)] == [192, 192]
    assert [p["stop"] for p in sides_params(battle)] == [[], []]
    form = client.get(reverse("arena")).content.decode()
    assert "or 192 tokens if you leave it empty" in form
    page = client.get(f"/arena/{battle.id}/").content.decode()
    assert '<p class="hint" id="token-limit">Both answers are limited to 192 tokens.</p>' in page


def test_the_api_gives_both_sides_one_limit_whatever_their_defaults(client, token, unequal):
    body = api(client, "post", "/api/v1/arena", token, {"prompt": "Name a colour."}).json()
    battle = Battle.objects.get(id=body["id"])
    assert [p["max_new_tokens"] for p in sides_params(battle)] == [256, 256]
    assert [p["stop"] for p in sides_params(battle)] == [[], []]
    assert body["max_new_tokens"] == 256
    mine = api(client, "post", "/api/v1/arena", token, {"prompt": "Name a colour.", "max_new_tokens": 40}).json()
    assert mine["max_new_tokens"] == 40
    assert [p["max_new_tokens"] for p in sides_params(Battle.objects.get(id=mine["id"]))] == [40, 40]


def test_cut_answers_read_alike_on_both_sides_after_the_reveal(client, owner, unequal):
    client.force_login(owner)
    start(client, max_new_tokens="12")
    battle = finish_battle(Battle.objects.get())
    Generation.objects.filter(id__in=[battle.left_id, battle.right_id]).update(finish_reason="length",
                                                                               generated_tokens=12)
    assert vote(battle, "left")
    page = client.get(f"/arena/{battle.id}/").content.decode()
    assert page.count('data-finish="length">Stopped at 12 tokens<') == 2


def test_a_base_model_is_left_out_of_the_draw_unless_staff_let_it_in(client, owner, catalogue):
    chat = [m for m in catalogue if not m.base]
    for m in chat[1:]:  # one chat model left, and the three base models
        ArenaExclusion.objects.create(model=m)
    with pytest.raises(anonymous.NoPair):
        anonymous.pick(random.Random(1))
    client.force_login(owner)
    assert "two of the 1 catalogue model in the draw" in client.get(reverse("arena")).content.decode()
    gemma = ModelEntry.objects.get(slug="gemma-3-270m-llamacpp")
    gemma.in_chat_draws = True
    gemma.save(update_fields=["in_chat_draws"])
    picks = {frozenset((p.left, p.right)) for p in (anonymous.pick(random.Random(s)) for s in range(20))}
    assert picks == {frozenset((chat[0].slug, gemma.slug))}
    assert "two of the 2 catalogue models in the draw" in client.get(reverse("arena")).content.decode()


def test_the_prompt_form_of_each_side_shows_only_after_the_reveal(client, owner, only_pair):
    client.force_login(owner)
    start(client)
    battle = finish_battle(Battle.objects.get())
    page = client.get(f"/arena/{battle.id}/").content.decode()
    assert 'id="prompt-forms"' not in page and "plain text to continue" not in page
    assert vote(battle, "left")
    page = client.get(f"/arena/{battle.id}/").content.decode()
    smol, gemma = (ModelEntry.objects.get(slug=slug) for slug in PAIR)
    forms = page.split('id="prompt-forms"', 1)[1].split("</p>", 1)[0]
    assert f"{smol.name}: chat template" in forms and f"{gemma.name}: plain text to continue (base model)" in forms
