"""The battle actions and what a battle shows now (arena/battles/actions.py, presenting.py):
the model holds only what is stored, so these are where a page, the API and the sockets meet
the streams."""

import pytest

from arena import streams
from arena.battles import presenting
from arena.battles.actions import start_battle, stop_battle, vote
from arena.battles.models import Battle
from arena.generations.models import Generation
from inference import protocol as p
from tests.arena.factories import finish, finish_battle

pytestmark = pytest.mark.django_db


def running_battle(owner, catalogue, *, blind=False) -> Battle:
    sides = {side: {"model": model, "params": {"temperature": 0.7, "max_new_tokens": 8}}
             for side, model in (("left", catalogue[0]), ("right", catalogue[3]))}
    battle = start_battle(owner, prompt="Hi", sides=sides, blind=blind)
    Generation.objects.filter(id__in=[battle.left_id, battle.right_id]).update(status=Generation.Status.RUNNING)
    return Battle.objects.select_related("left__model", "right__model").get(id=battle.id)


def test_a_stored_battle_shows_as_stored_once_its_streams_are_gone(owner, catalogue):
    """Streams expire long after the rows are stored: a finished battle is judged on its rows."""
    battle = finish_battle(running_battle(owner, catalogue))
    client, keys = streams.client(), streams.keys()
    client.delete(*[keys.stream(str(gen.id)) for _side, gen in battle.sides])
    shown = presenting.shown(battle)
    assert shown.views is None and shown.finished
    assert shown.outcomes == ["done", "done"] and shown.votable
    assert vote(battle, "tie") and Battle.objects.get(id=battle.id).outcome == "tie"


def test_a_side_still_coming_is_waited_for_and_takes_no_vote(owner, catalogue):
    battle = running_battle(owner, catalogue)
    finish(battle.left)
    shown = presenting.shown(Battle.objects.select_related("left", "right").get(id=battle.id))
    assert shown.outcomes == ["done", None] and not shown.finished
    assert not vote(battle, "left") and Battle.objects.get(id=battle.id).outcome == ""


def test_a_failed_row_is_final_whatever_its_stream_says(owner, catalogue):
    battle = running_battle(owner, catalogue)
    name = streams.keys().stream(str(battle.right.id))
    streams.client().xadd(name, p.event(p.DONE, text="Red.", finish_reason="stop", metrics={}))
    streams.client().expire(name, 120)
    finish(battle.left)
    finish(battle.right, status=Generation.Status.FAILED)
    shown = presenting.shown(Battle.objects.select_related("left", "right").get(id=battle.id))
    assert shown.outcomes == ["done", "failed"] and not shown.votable


def test_stop_battle_cancels_only_the_side_still_running(owner, catalogue):
    battle = running_battle(owner, catalogue)
    finish(battle.left)
    client, keys = streams.client(), streams.keys()
    client.delete(*[keys.cancel(str(gen.id)) for _side, gen in battle.sides])
    stop_battle(battle)
    assert client.get(keys.cancel(str(battle.right.id))) == b"user"
    assert client.get(keys.cancel(str(battle.left.id))) is None  # done already: nothing to stop
    client.delete(keys.cancel(str(battle.right.id)))
