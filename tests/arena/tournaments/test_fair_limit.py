"""One token limit on both sides of every tournament match (arena/battles/fair.py): the form's
value (it always gives one), else, through the API, ARENA_BLIND_MAX_NEW_TOKENS, whatever the
contestants' own defaults (128 against 256 tokens, a stop sequence on one) say."""

import pytest
from django.urls import reverse

from arena.catalogue.models import ModelEntry
from arena.tournaments.actions import pick_winner
from arena.tournaments.models import Tournament
from tests.arena.api_client import api
from tests.arena.factories import finish_battle

pytestmark = pytest.mark.django_db


@pytest.fixture
def four(catalogue):
    """Four contestants whose defaults cut answers at different lengths."""
    chosen = catalogue[:4]
    for i, m in enumerate(chosen):
        m.default_params = {"temperature": 0.7, "max_new_tokens": 128 if i % 2 else 256,
                            **({"stop": ["\n\n"]} if i == 1 else {})}
        m.save(update_fields=["default_params"])
    return chosen


def every_side(t: Tournament) -> list[dict]:
    """The params of both sides of every match played so far (each match decided, left winning)."""
    seen = []
    while (match := Tournament.objects.get(id=t.id).current_match()) is not None:
        battle = finish_battle(match.battle)
        seen += [gen.params for _side, gen in battle.sides]
        pick_winner(Tournament.objects.get(id=t.id), match, "left")
    return seen


def test_the_forms_limit_binds_both_sides_of_every_match(client, owner, four):
    client.force_login(owner)
    form = client.get(reverse("tournament-new")).content.decode()
    assert "Max new tokens: the same for every contestant, whatever its own default; empty: 256." in form
    data = {"seeding": "given", "prompt": "Name a colour.", "temperature": "0.7", "max_new_tokens": "24",
            **{f"contestant_{i + 1}": m.slug for i, m in enumerate(four)}}
    assert client.post(reverse("tournament-new"), data).status_code == 302
    sides = every_side(Tournament.objects.get())
    assert len(sides) == 6  # three matches
    assert {p["max_new_tokens"] for p in sides} == {24}
    assert all(p["stop"] == [] for p in sides)


def test_an_api_tournament_without_a_limit_gets_the_one_default(client, token, four, settings):
    settings.ARENA_BLIND_MAX_NEW_TOKENS = 99
    created = api(client, "post", "/api/v1/tournaments", token,
                  {"contestants": [m.slug for m in four], "prompt": "Name a colour.",
                   "params": {"temperature": 0.7}, "seeding": "given"})
    assert created.status_code == 201, created.content
    t = Tournament.objects.get(id=created.json()["id"])
    assert t.params == {"temperature": 0.7, "max_new_tokens": 99}
    sides = every_side(t)
    assert {p["max_new_tokens"] for p in sides} == {99} and all(p["stop"] == [] for p in sides)
    assert ModelEntry.objects.get(id=four[1].id).default_params["stop"] == ["\n\n"]  # the entry keeps its own
