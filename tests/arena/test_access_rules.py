"""Each kind's access rule, asked directly (arena/access.py lists them): the owner gets the
object; another user, staff included, a missing id and a malformed one all get the one
NotFound; and each kind's own narrowing (a battle's mode, a blind battle's hidden answers).
Pages, API and sockets answering by these rules: tests/arena/test_access.py, test_security.py."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.http import Http404

from arena.access import NotFound
from arena.api.http import Refusal
from arena.battles.access import access_battle
from arena.battles.models import Battle
from arena.generations.access import access_generation
from arena.suite_runs.access import access_run
from arena.suite_runs.actions import start_run
from arena.suites.access import access_suite
from arena.tournaments.access import access_tournament
from arena.tournaments.actions import start_tournament
from tests.arena.factories import comparison, generation, suite

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("operator", password="pw", is_staff=True)


@pytest.fixture
def things(owner, catalogue):
    """(access function, one of the owner's objects) per kind."""
    return {
        "generation": (access_generation, generation(owner, catalogue[0], text="Blue.")),
        "battle": (access_battle, comparison(owner, catalogue[0], catalogue[3])),
        "tournament": (access_tournament,
                       start_tournament(owner, contestants=catalogue[:4], prompt="Name a colour.", seeding="given")),
        "suite": (access_suite, suite(owner, "Name a colour.")),
        "suite_run": (access_run, start_run(owner, suite=suite(owner, "Name a colour."), contestants=catalogue[:2])),
    }


KINDS = ["generation", "battle", "tournament", "suite", "suite_run"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_owner_gets_their_own(things, owner, kind):
    access, obj = things[kind]
    assert access(owner, obj.id) == obj
    assert access(owner, str(obj.id)) == obj  # as a URL or a JSON body gives it


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("who", ["outsider", "staff"])
def test_anyone_else_staff_included_gets_not_found(things, kind, who, request):
    access, obj = things[kind]
    with pytest.raises(NotFound):
        access(request.getfixturevalue(who), obj.id)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("missing", [uuid.uuid4(), "not-a-uuid", None])
def test_a_missing_or_malformed_id_gets_the_same_not_found(things, owner, kind, missing):
    access, _ = things[kind]
    with pytest.raises(NotFound) as caught:
        access(owner, missing)
    assert str(caught.value).startswith("No such ")


def test_not_found_is_a_pages_404_and_an_apis_refusal_with_its_code():
    exc = NotFound("No such battle.")
    assert isinstance(exc, Http404) and isinstance(exc, Refusal)
    assert exc.status == 404 and exc.as_json() == {"error": {"code": "not_found", "message": "No such battle."}}


def test_a_battle_narrowed_to_a_mode_is_not_found_in_another(owner, catalogue):
    named = comparison(owner, catalogue[0], catalogue[3])
    anonymous = comparison(owner, catalogue[0], catalogue[3], mode=Battle.Mode.ANONYMOUS, blind=True)
    assert access_battle(owner, anonymous.id) == anonymous  # any mode: its page, socket and share link
    assert access_battle(owner, named.id, mode=Battle.Mode.COMPARISON) == named
    with pytest.raises(NotFound, match=r"No such comparison\."):
        access_battle(owner, anonymous.id, mode=Battle.Mode.COMPARISON)
    with pytest.raises(NotFound, match=r"No such anonymous battle\."):
        access_battle(owner, named.id, mode=Battle.Mode.ANONYMOUS)


def test_only_a_battle_never_blind_may_be_copied(owner, catalogue):
    named = comparison(owner, catalogue[0], catalogue[3])
    blind = comparison(owner, catalogue[0], catalogue[3], mode=Battle.Mode.ANONYMOUS, blind=True)
    assert access_battle(owner, named.id, blind=False) == named
    with pytest.raises(NotFound):
        access_battle(owner, blind.id, blind=False)


def test_a_blind_battles_answers_stay_hidden_from_their_owner_until_the_reveal(owner, catalogue):
    blind = comparison(owner, catalogue[0], catalogue[3], mode=Battle.Mode.ANONYMOUS, blind=True)
    with pytest.raises(NotFound):
        access_generation(owner, blind.left_id)
    Battle.objects.filter(id=blind.id).update(revealed=True)
    assert access_generation(owner, blind.left_id).id == blind.left_id
