"""What to pick after a tournament (issue 35): the revealed tournament's page and API end with the
decision summary from its matches, saying first how few verdicts one bracket gives and never naming
a single best the data cannot; before the reveal, nothing (blindness)."""

import html as html_lib

import pytest

from arena.tournaments.actions import pick_winner, start_tournament
from arena.tournaments.models import Tournament
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import finish_battle, identifiers, play_through

pytestmark = pytest.mark.django_db
PARAMS = {"temperature": 0.7, "max_new_tokens": 16}


@pytest.fixture
def four(catalogue):
    return catalogue[:4]


@pytest.fixture
def eight(catalogue):
    return catalogue[:8]


def start(owner, contestants):
    return start_tournament(owner, contestants=contestants, prompt="Name a colour.", params=PARAMS, seeding="given")


def test_nothing_before_the_reveal_and_what_to_pick_after_it(client, owner, token, four):
    client.force_login(owner)
    t = start(owner, four)
    first = Tournament.objects.get(id=t.id).current_match()
    finish_battle(first.battle)
    pick_winner(t, first, "left")  # a decided match: still blind
    blind = client.get(t.get_absolute_url()).content.decode()
    assert "What to pick" not in blind and 'id="decision"' not in blind
    state = api(client, "get", f"/api/v1/tournaments/{t.id}", token)
    assert "decision" not in state.json() and all(word not in state.content.decode() for word in identifiers(four))

    play_through(t)  # the left side of every battle wins
    final = max(t.matches.all(), key=lambda m: m.round)
    winner, runner_up = t.winner, final.right if final.winner_id == final.left_id else final.left
    body = api(client, "get", f"/api/v1/tournaments/{t.id}", token).json()
    assert_conforms(body, "/api/v1/tournaments/{id}", "get", 200)
    decision = body["decision"]
    # Three verdicts: the winner won both its matches, and still the data do not name it the best.
    assert decision["best"] is None and decision["contenders"][0] == winner.slug
    assert runner_up.slug in decision["contenders"]
    assert decision["sentences"][0] == (
        f"One bracket: 3 verdicts, each entry met at most 2 others: {winner.label} won its matches, but the data "
        f"cannot say it is better than the runner-up, {runner_up.label}.")
    assert any(s.startswith("About ") and f"between {winner.label} and {runner_up.label}" in s
               for s in decision["sentences"]), decision["sentences"]
    assert ("3 of the 3 verdicts come from tournament matches, whose pairings are not random (winners meet "
            "winners).") in decision["caveats"]
    assert any(c.startswith("Provisional: all ") for c in decision["caveats"])
    # The fastest among the contenders, from the match answers' figures (finish_battle: 12.5 and 31.25 tok/s).
    assert decision["fastest"]["value"] in (12.5, 31.25)
    html = html_lib.unescape(client.get(t.get_absolute_url()).content.decode())
    assert html.index('id="decision"') > html.index('id="reveal"')
    for sentence in decision["sentences"]:
        assert sentence in html
    assert "is the best in this view" not in html


def test_a_bracket_of_eight_says_how_many_more_verdicts_the_finals_two_need(client, owner, token, eight):
    t = play_through(start(owner, eight))
    decision = api(client, "get", f"/api/v1/tournaments/{t.id}", token).json()["decision"]
    final = max(t.matches.all(), key=lambda m: m.round)
    runner_up = final.right if final.winner_id == final.left_id else final.left
    assert decision["best"] is None
    assert decision["sentences"][0].startswith("One bracket: 7 verdicts, each entry met at most 3 others: ")
    words = [s for s in decision["sentences"] if f"between {t.winner.label} and {runner_up.label}" in s]
    assert len(words) == 1 and "(1 so far)" in words[0], decision["sentences"]
