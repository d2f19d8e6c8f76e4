"""A team for the team tests: the owner's ("Evals", their current team: what they start goes into
it), a colleague in it, and a stranger in another team ("Elsewhere"); none of them staff."""

import pytest
from django.contrib.auth import get_user_model

from arena.teams.membership import add_member
from arena.teams.models import Team


def user(name: str):
    return get_user_model().objects.create_user(name, password=f"{name}-pass-1")


@pytest.fixture
def team(owner):
    evals = Team.objects.create(name="Evals")
    add_member(evals, owner)
    return evals


@pytest.fixture
def colleague(team):
    member = user("colleague")
    add_member(team, member)
    return member


@pytest.fixture
def stranger(db):
    member = user("stranger")
    add_member(Team.objects.create(name="Elsewhere"), member)
    return member
