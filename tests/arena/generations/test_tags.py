"""Prompt tags: given on the forms and the API, normalised, carried by re-runs, follow-ups
and every match of a tournament, suggested back to their user, and a leaderboard filter.
No model runs: battles are finished by hand."""

import pytest
from django import forms
from django.urls import reverse

from arena.battles import actions
from arena.battles.models import Battle
from arena.generations import tags
from arena.tournaments.actions import replay_tournament
from arena.tournaments.models import Tournament
from tests.arena.api_client import api
from tests.arena.factories import leaderboard_order, verdict

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("given, stored", [("Coding", "coding"), ("  long  form ", "long-form"), ("", ""),
                                           ("résumé_fr", "résumé_fr"), ("a" * 40, "a" * 40)])
def test_tags_are_normalised(given, stored):
    assert tags.normalise(given) == stored


@pytest.mark.parametrize("bad", ["-lead", "semi;colon", "<script>", "a" * 41, "x/y"])
def test_odd_tags_are_refused_with_the_shape_expected(bad):
    with pytest.raises(forms.ValidationError, match="letters, digits"):
        tags.normalise(bad)


def test_a_comparison_tag_reaches_both_answers_its_reruns_and_follow_ups(client, owner, catalogue):
    smollm, _spec, _awq, gemma = catalogue[:4]
    client.force_login(owner)
    response = client.post(reverse("compare"), {"left_model": smollm.slug, "right_model": gemma.slug,
                                                "prompt": "Sort a list in Python", "tag": "Coding"})
    battle = Battle.objects.get()
    assert response.status_code == 302 and battle.tag == "coding"
    assert battle.left.tag == battle.right.tag == "coding"
    assert actions.rerun(battle, swap=True).tag == "coding"
    assert actions.follow_up(battle, "And in Rust?").tag == "coding"
    form = client.get(reverse("compare") + f"?from={battle.id}").content.decode()
    assert 'value="coding"' in form and '<datalist id="tag-options"><option value="coding">' in form


def test_a_bad_tag_is_refused_on_the_page_and_by_the_api(client, owner, token, catalogue):
    client.force_login(owner)
    page = client.post(reverse("playground"), {"model": catalogue[0].slug, "prompt": "Hi", "tag": "no;way"})
    assert page.status_code == 400 and 'data-field="tag"' in page.content.decode()
    body = {"left_model": catalogue[0].slug, "right_model": catalogue[3].slug, "prompt": "Hi", "tag": "no;way"}
    refused = api(client, "post", "/api/v1/comparisons", token, body)
    assert refused.status_code == 400 and "tag" in refused.json()["error"]["fields"]
    refused = api(client, "post", "/api/v1/generations", token, {"model": catalogue[0].slug, "prompt": "Hi", "tag": 7})
    assert refused.status_code == 400 and "tag" in refused.json()["error"]["message"]
    assert not Battle.objects.exists()


def test_the_api_stores_and_returns_tags(client, token, catalogue):
    made = api(client, "post", "/api/v1/generations", token,
               {"model": catalogue[0].slug, "prompt": "Hi", "tag": "Greetings"})
    assert made.status_code == 202 and made.json()["tag"] == "greetings"
    made = api(client, "post", "/api/v1/comparisons", token,
               {"left_model": catalogue[0].slug, "right_model": catalogue[3].slug, "prompt": "Hi", "tag": "chat"})
    assert made.status_code == 202 and made.json()["tag"] == "chat"
    made = api(client, "post", "/api/v1/tournaments", token,
               {"contestants": [m.slug for m in catalogue], "prompt": "Hi", "tag": "bracket"})
    assert made.status_code == 201 and made.json()["tag"] == "bracket"
    tournament = Tournament.objects.get()
    assert tournament.current_match().battle.tag == "bracket"
    assert replay_tournament(tournament, "Again").tag == "bracket"


def test_the_leaderboard_filters_by_prompt_tag(client, owner, catalogue):
    smollm, spec, awq, gemma = catalogue[:4]
    for battle in [verdict(owner, smollm, gemma, "left") for _ in range(3)]:
        Battle.objects.filter(id=battle.id).update(tag="coding")
    verdict(owner, awq, spec, "left")
    hidden = verdict(owner, gemma, awq, "left", blind=True)  # unrevealed: its tag is not offered either
    Battle.objects.filter(id=hidden.id).update(tag="secret")
    client.force_login(owner)
    page = client.get(reverse("leaderboard") + "?tag=coding").content.decode()
    assert set(leaderboard_order(page)) == {"smollm2-135m", "gemma-3-270m"} and "from 3 verdicts" in page
    assert '<option value="coding" selected>' in page and "secret" not in page
    everything = client.get(reverse("leaderboard") + "?tag=secret").content.decode()
    every_model = {"smollm2-135m", "gemma-3-270m", "smollm2-135m-awq", "smollm2-135m-spec"}
    assert set(leaderboard_order(everything)) == every_model
