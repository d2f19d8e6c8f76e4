"""Tournaments' part of the blind secrecy rule (arena/tournaments/secrecy.py, registered with
arena/battles/secrecy.py): an owner's unrevealed tournament's contestants are secret to them
while it runs, is stopped, or had a match started within SECRET_FOR."""

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from arena.battles.secrecy import SECRET_FOR, secret_slugs
from arena.catalogue.models import ModelEntry
from arena.tournaments.actions import resume_tournament, start_tournament, stop_tournament
from arena.tournaments.models import Tournament
from tests.arena.factories import play_through

pytestmark = pytest.mark.django_db

CONTESTANTS = [("kestrel-7b", "Kestrel Seven"), ("osprey-3b", "Osprey Three"),
               ("harrier-1b", "Harrier One"), ("merlin-2b", "Merlin Two")]


@pytest.fixture
def judge(db):
    return get_user_model().objects.create_user("judge", password="judge-pass-123")


@pytest.fixture
def contestants(smollm):
    return [ModelEntry.objects.create(slug=slug, name=name, source=smollm.source, gguf_file=smollm.gguf_file)
            for slug, name in CONTESTANTS]


@pytest.fixture
def tournament(judge, contestants):
    return start_tournament(judge, contestants=contestants, prompt="Name a colour.", seeding="given",
                            params={"temperature": 0.7, "max_new_tokens": 8})


def test_the_secret_models_are_the_owners_unrevealed_tournaments_contestants(judge, admin_user, tournament,
                                                                              contestants):
    slugs = {m.slug for m in contestants}
    assert secret_slugs(judge) == slugs
    assert secret_slugs(admin_user) == frozenset()  # not their tournament to judge
    assert stop_tournament(tournament) and secret_slugs(judge) == slugs  # stopped: may be resumed
    later = timezone.now() + SECRET_FOR + timedelta(minutes=1)
    assert secret_slugs(judge, now=later) == frozenset()  # abandoned a day ago: long dead
    assert resume_tournament(tournament)
    assert play_through(tournament).revealed
    assert secret_slugs(judge) == frozenset()  # revealed


def test_a_tournament_long_started_stays_secret_while_its_matches_go_on(judge, tournament, contestants):
    Tournament.objects.filter(id=tournament.id).update(created_at=timezone.now() - SECRET_FOR * 2)
    assert secret_slugs(judge) == {m.slug for m in contestants}  # match 1 started just now
