"""Anonymous battles in History: their own tab lists the user's, unvoted ones included (an
unvoted battle left for a new one can be found and judged again), as "Model A vs Model B" until
the vote, named after it; nobody else's; searchable by prompt, never by a hidden name. The
export link says which battles the export holds (anonymous ones once judged among them).
No model runs: the battles' answers are finished by the test as the battle task would."""

import json
import re

import pytest
from django.urls import reverse

from arena.battles.actions import vote
from arena.battles.models import Battle
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import comparison

pytestmark = pytest.mark.django_db


def anonymous_battle(owner, left, right, prompt="Name a colour.") -> Battle:
    """An anonymous battle as the draw starts one (blind, unrevealed), both answers in."""
    return comparison(owner, left, right, prompt, mode=Battle.Mode.ANONYMOUS, blind=True)


def rows_of(html: str) -> list[str]:
    return re.findall(r'<tr data-id="([0-9a-f-]{36})"', html)


def test_the_anonymous_tab_lists_unvoted_battles_blind_and_voted_ones_named(client, owner, outsider, catalogue):
    smol, gemma = catalogue[0], catalogue[3]
    unvoted = anonymous_battle(owner, smol, gemma, "Which colour is the sea?")
    voted = anonymous_battle(owner, gemma, smol, "Which colour is grass?")
    assert vote(voted, "right")
    theirs = anonymous_battle(outsider, smol, gemma)
    client.force_login(owner)

    html = client.get(reverse("history-anonymous")).content.decode()
    assert rows_of(html) == [str(voted.id), str(unvoted.id)] and str(theirs.id) not in html
    unvoted_row = html.split(f'data-id="{unvoted.id}"')[1].split("</tr>")[0]
    assert "Model A" in unvoted_row and "Model B" in unvoted_row and "not judged yet" in unvoted_row
    assert unvoted.get_absolute_url() in unvoted_row
    assert smol.name not in unvoted_row and gemma.name not in unvoted_row
    voted_row = html.split(f'data-id="{voted.id}"')[1].split("</tr>")[0]
    assert f"{smol.label or smol.name} is better" in voted_row and gemma.name in voted_row

    tabs = client.get(reverse("history-comparisons")).content.decode()
    assert 'href="/history/anonymous/"' in tabs and re.search(r"Anonymous battles <span class=\"count\">2</span>", tabs)


def test_the_anonymous_tab_searches_prompts_never_hidden_names(client, owner, catalogue):
    battle = anonymous_battle(owner, catalogue[0], catalogue[3], "Which colour is the sea?")
    client.force_login(owner)
    url = reverse("history-anonymous")
    assert rows_of(client.get(url, {"q": "sea"}).content.decode()) == [str(battle.id)]
    assert rows_of(client.get(url, {"q": "SmolLM2"}).content.decode()) == []
    assert reverse("history-anonymous") in client.get("/history/").content.decode()


def test_the_export_link_says_which_battles_it_holds(client, owner, catalogue):
    comparison(owner, catalogue[0], catalogue[3])
    client.force_login(owner)
    html = client.get(reverse("history-comparisons")).content.decode()
    assert "anonymous battles once judged" in html and "suite-run pairs" in html


def test_a_judged_anonymous_battle_is_exported_as_the_api_documents_it(client, owner, token, catalogue):
    judged = anonymous_battle(owner, catalogue[0], catalogue[3])
    assert vote(judged, "left")
    anonymous_battle(owner, catalogue[0], catalogue[3])  # unvoted: not exported (its names are hidden)
    response = api(client, "get", "/api/v1/export/battles?mode=anonymous&format=json", token)
    body = json.loads(b"".join(response.streaming_content))
    assert [row["id"] for row in body["rows"]] == [str(judged.id)] and body["rows"][0]["mode"] == "anonymous"
    assert_conforms(body, "/api/v1/export/battles")
