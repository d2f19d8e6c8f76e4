"""A vote after Stop: a comparison or an anonymous battle whose answers were stopped is judged on
what was written ("both are bad" is often why the user stopped), with a word saying so; one
still coming, or with a failed answer, says why it takes no vote; a stopped tournament match is
run again instead (its winner advances). A stopped blind battle still shows no names before
its vote. Streams are written to real Redis as a worker writes them."""

import pytest
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from arena import streams
from arena.battles import presenting, voting
from arena.battles.actions import start_battle, vote
from arena.battles.models import Battle
from arena.generations.models import Generation
from inference import protocol as p
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db


def make_battle(owner, catalogue, *, blind=False, mode=Battle.Mode.COMPARISON) -> Battle:
    sides = {side: {"model": model, "params": {"temperature": 0.7, "max_new_tokens": 8}}
             for side, model in (("left", catalogue[0]), ("right", catalogue[3]))}
    battle = start_battle(owner, prompt="Hi", sides=sides, blind=blind, mode=mode)
    Generation.objects.filter(id__in=[battle.left_id, battle.right_id]).update(status=Generation.Status.RUNNING)
    return fresh(battle)


def fresh(battle) -> Battle:
    return Battle.objects.select_related("left__model", "right__model").get(id=battle.id)


def emit(gen, kind, **fields):
    name = streams.keys().stream(str(gen.id))
    streams.client().xadd(name, p.event(kind, **fields))
    streams.client().expire(name, 120)


def page_vote(client, battle, outcome):
    return client.post(reverse("battle-vote", args=[battle.id]), {"outcome": outcome}, headers={"HX-Request": "true"})


def stopped(gen, text="Blue is a"):
    """A side the user stopped: some text, then the worker's CANCELLED."""
    emit(gen, p.STARTED, prompt_tokens=3, queue_s=0.0)
    emit(gen, p.TOKEN, text=text, n=3)
    emit(gen, p.CANCELLED, text=text, metrics={"generated_tokens": 3})


def done(gen, text="Red."):
    emit(gen, p.STARTED, prompt_tokens=3, queue_s=0.0)
    emit(gen, p.TOKEN, text=text, n=1)
    emit(gen, p.DONE, text=text, finish_reason="stop", metrics={"generated_tokens": 1})


def test_both_bad_after_stop_both_is_recorded_on_the_page(client, owner, catalogue):
    client.force_login(owner)
    battle = make_battle(owner, catalogue)
    stopped(battle.left)
    stopped(battle.right, "Red is")
    page = client.get(reverse("battle-detail", args=[battle.id])).content.decode()
    assert voting.VOTE_AFTER_STOP in page and 'value="both_bad" disabled' not in page

    response = page_vote(client, battle, "both_bad")
    assert response.status_code == 200 and 'data-outcome="both_bad"' in response.content.decode()
    assert fresh(battle).outcome == "both_bad"


def test_a_stopped_side_beside_a_finished_one_takes_any_verdict_once_stored_too(client, owner, token, catalogue):
    battle = make_battle(owner, catalogue)
    done(battle.left)
    stopped(battle.right)
    response = api(client, "post", reverse("api-comparison-vote", args=[battle.id]), token, {"outcome": "left"})
    assert response.status_code == 200 and response.json()["outcome"] == "left"

    battle.right.finish(Generation.Status.CANCELLED, text="Blue is a")  # the run's write: still judged
    assert presenting.shown(fresh(battle)).votable
    assert vote(fresh(battle), "tie") and fresh(battle).outcome == "tie"


def test_a_battle_that_takes_no_vote_says_why_on_the_page_and_in_the_api(client, owner, token, catalogue):
    client.force_login(owner)
    running = make_battle(owner, catalogue)
    emit(running.left, p.STARTED, prompt_tokens=3, queue_s=0.0)
    page = client.get(reverse("battle-detail", args=[running.id])).content.decode()
    assert voting.VOTE_WAIT in page and 'value="both_bad" disabled' in page

    failed = make_battle(owner, catalogue)
    done(failed.left)
    emit(failed.right, p.FAILED, reason="The worker died.", code=p.WORKER_DIED)
    response = page_vote(client, failed, "both_bad")
    assert response.status_code == 400 and voting.VOTE_FAILED in response.content.decode()
    response = api(client, "post", reverse("api-comparison-vote", args=[failed.id]), token, {"outcome": "both_bad"})
    assert response.status_code == 409 and response.json()["error"]["message"] == voting.VOTE_FAILED
    assert fresh(failed).outcome == ""


def test_a_stopped_tournament_match_is_run_again_not_judged(owner, catalogue, settings):
    settings.ARENA_BLIND_WORDS_PER_S = 1000  # the paced text is all out at once
    battle = make_battle(owner, catalogue, blind=True, mode=Battle.Mode.TOURNAMENT)
    stopped(battle.left)
    stopped(battle.right)
    b = fresh(battle)
    assert presenting.shown(b).refusal == voting.VOTE_STOPPED_MATCH and not vote(b, "left")


def test_a_stopped_anonymous_battle_is_judged_blind_then_named(client, owner, catalogue, settings):
    settings.ARENA_BLIND_WORDS_PER_S = 1000
    client.force_login(owner)
    battle = make_battle(owner, catalogue, blind=True, mode=Battle.Mode.ANONYMOUS)
    stopped(battle.left)
    stopped(battle.right, "Red is")
    names = [battle.left.model.name, battle.right.model.name]
    page = client.get(reverse("arena-battle", args=[battle.id])).content.decode()
    assert voting.VOTE_AFTER_STOP in page and 'value="both_bad" disabled' not in page
    assert not any(name in page for name in names)  # nothing named before the vote

    response = client.post(reverse("arena-vote", args=[battle.id]), {"outcome": "both_bad"})
    assert response.status_code == 302
    page = client.get(reverse("arena-battle", args=[battle.id])).content.decode()
    assert all(name in page for name in names) and fresh(battle).outcome == "both_bad"


@given(st.lists(st.sampled_from(["done", "cancelled", "failed", None]), min_size=2, max_size=2),
       st.sampled_from(["comparison", "anonymous", "tournament"]))
def test_the_rule_fails_on_any_failure_waits_on_any_side_coming_and_judges_stops_outside_tournaments(outcomes, mode):
    refusal = voting.vote_refusal_for(outcomes, mode)
    if "failed" in outcomes:
        assert refusal == voting.VOTE_FAILED
    elif None in outcomes:
        assert refusal == voting.VOTE_WAIT
    elif "cancelled" in outcomes and mode == "tournament":
        assert refusal == voting.VOTE_STOPPED_MATCH
    else:
        assert refusal == ""

