"""The vote is accepted as soon as both streams have ended, not only once the battle task has
stored the rows (a few milliseconds later): the page's socket opens the verdict on the
streams' terminal events, and a click in between must not be refused "must be complete".
Streams are written to real Redis as a worker writes them; the rows stay as the task left them."""

import pytest
from django.urls import reverse

from arena import streams
from arena.battles import presenting
from arena.battles.actions import start_battle, vote
from arena.battles.models import Battle
from arena.generations.models import Generation
from inference import protocol as p
from tests.arena.api_client import api
from tests.arena.factories import finish_battle

pytestmark = pytest.mark.django_db


def make_battle(owner, catalogue, *, blind=False, mode=Battle.Mode.COMPARISON) -> Battle:
    sides = {side: {"model": model, "params": {"temperature": 0.7, "max_new_tokens": 8}}
             for side, model in (("left", catalogue[0]), ("right", catalogue[3]))}
    battle = start_battle(owner, prompt="Hi", sides=sides, blind=blind, mode=mode)
    Generation.objects.filter(id__in=[battle.left_id, battle.right_id]).update(status=Generation.Status.RUNNING)
    return Battle.objects.select_related("left__model", "right__model").get(id=battle.id)


def emit(gen, kind, **fields):
    name = streams.keys().stream(str(gen.id))
    streams.client().xadd(name, p.event(kind, **fields))
    streams.client().expire(name, 120)


def stream_answer(gen, text="Blue.", *, end=p.DONE):
    emit(gen, p.STARTED, prompt_tokens=3, queue_s=0.0)
    emit(gen, p.TOKEN, text=text, n=1)
    if end == p.DONE:
        emit(gen, p.DONE, text=text, finish_reason="stop", metrics={"generated_tokens": 1})
    elif end == p.FAILED:
        emit(gen, p.FAILED, reason="The worker died.", code=p.WORKER_DIED)


def fresh(battle) -> Battle:
    return Battle.objects.select_related("left__model", "right__model").get(id=battle.id)


def page_vote(client, battle, outcome="left"):
    return client.post(reverse("battle-vote", args=[battle.id]), {"outcome": outcome},
                       headers={"HX-Request": "true"})


def test_the_page_vote_is_accepted_once_both_streams_ended_before_the_rows_are_stored(client, owner, catalogue):
    client.force_login(owner)
    battle = make_battle(owner, catalogue)
    stream_answer(battle.left)
    emit(battle.right, p.STARTED, prompt_tokens=3, queue_s=0.0)
    emit(battle.right, p.TOKEN, text="Re", n=1)  # the right side is still coming
    assert not presenting.shown(fresh(battle)).votable
    assert page_vote(client, battle).status_code == 400
    assert fresh(battle).outcome == ""

    emit(battle.right, p.DONE, text="Red.", finish_reason="stop", metrics={})
    b = fresh(battle)
    assert b.left.status == b.right.status == Generation.Status.RUNNING  # the task has not stored them yet
    response = page_vote(client, battle)
    assert response.status_code == 200 and 'data-outcome="left"' in response.content.decode()
    assert fresh(battle).outcome == "left"

    finish_battle(battle)  # the task's write, a few ms later, keeps the verdict
    b = fresh(battle)
    assert b.outcome == "left" and b.finished and presenting.shown(b).votable


def test_the_api_vote_is_accepted_once_both_streams_ended_and_refused_before(client, owner, token, catalogue):
    battle = make_battle(owner, catalogue)
    url = reverse("api-comparison-vote", args=[battle.id])
    stream_answer(battle.right)
    response = api(client, "post", url, token, {"outcome": "right"})
    assert response.status_code == 409 and "must be complete" in response.json()["error"]["message"]
    stream_answer(battle.left)
    response = api(client, "post", url, token, {"outcome": "right"})
    assert response.status_code == 200 and response.json()["outcome"] == "right"
    assert fresh(battle).outcome == "right"


def test_a_stream_that_failed_or_a_row_stored_failed_is_never_judged(client, owner, token, catalogue):
    battle = make_battle(owner, catalogue)
    stream_answer(battle.left)
    stream_answer(battle.right, end=p.FAILED)
    assert not presenting.shown(fresh(battle)).votable
    assert api(client, "post", reverse("api-comparison-vote", args=[battle.id]), token,
               {"outcome": "left"}).status_code == 409

    other = make_battle(owner, catalogue)
    stream_answer(other.left)
    stream_answer(other.right)
    other.right.finish(Generation.Status.FAILED, text="", reason="Swept.")  # the sweeper's word is final
    assert not presenting.shown(fresh(other)).votable


def test_the_follow_up_still_waits_for_the_stored_answers(client, owner, catalogue):
    client.force_login(owner)
    battle = make_battle(owner, catalogue)
    stream_answer(battle.left)
    stream_answer(battle.right)
    assert presenting.shown(fresh(battle)).votable
    response = client.post(reverse("battle-continue", args=[battle.id]), {"prompt": "More?"})
    assert response.status_code == 400 and "must be complete" in response.content.decode()


def test_a_paced_blind_side_still_coming_out_is_not_judged_though_its_stream_ended(owner, catalogue, settings):
    settings.ARENA_BLIND_WORDS_PER_S = 2
    battle = make_battle(owner, catalogue, blind=True, mode=Battle.Mode.TOURNAMENT)
    words = "one two three four five six seven eight"
    stream_answer(battle.left, words)
    stream_answer(battle.right, words)
    b = fresh(battle)
    assert b.paced and not presenting.shown(b).votable and not vote(b, "left")
    assert fresh(battle).outcome == ""
