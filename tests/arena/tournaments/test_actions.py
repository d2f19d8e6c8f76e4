"""The tournament actions (arena/tournaments/actions.py) that the page tests reach only through
a played bracket."""

import pytest

from arena.battles.models import Battle
from arena.tournaments.actions import finish_tournament, start_tournament, stop_tournament
from arena.tournaments.models import Tournament

pytestmark = pytest.mark.django_db
PARAMS = {"temperature": 0.7, "max_new_tokens": 16}


def test_a_tournament_finishes_once_and_reveals_every_battle(owner, catalogue):
    t = start_tournament(owner, contestants=catalogue[:4], prompt="Name a colour.", params=PARAMS, seeding="given")
    finish_tournament(t, catalogue[0])
    finish_tournament(Tournament.objects.get(id=t.id), catalogue[1])  # a second claim changes nothing
    t.refresh_from_db()
    assert t.state == Tournament.State.FINISHED and t.winner == catalogue[0] and t.finished_at is not None
    assert t.battles().exists() and not Battle.objects.filter(revealed=False).exists()


def test_only_a_running_tournament_stops(owner, catalogue):
    t = start_tournament(owner, contestants=catalogue[:4], prompt="Name a colour.", params=PARAMS, seeding="given")
    finish_tournament(t, catalogue[0])
    assert not stop_tournament(Tournament.objects.get(id=t.id))
    assert Tournament.objects.get(id=t.id).state == Tournament.State.FINISHED
