"""A team's battles, tournaments and generations: its members open them read-only (pages and the
JSON API's GETs), with a line that says so and none of the controls they cannot use; every write
(vote, pick, re-run, stop, follow-up, replay) stays the owner's and staff's (403, code read_only);
a member of another team and a user in no team get a 404; a blind item names nobody to a
teammate either until its owner's vote or reveal (arena/access.py)."""

import pytest
from django.urls import reverse

from arena.accounts.models import ApiToken
from arena.battles.models import Battle
from arena.tournaments.actions import pick_winner, start_tournament
from arena.tournaments.models import Tournament
from tests.arena.api_client import api
from tests.arena.factories import BLIND_PARAMS, comparison, finish_battle, generation, play_through

pytestmark = pytest.mark.django_db
READ_ONLY = 'id="read-only-note"'


def names(models) -> list[str]:
    """The catalogue entries' display names: words no page shows by chance."""
    return [m.name for m in models]


def shown_names(html: str, models) -> list[str]:
    return [n for n in names(models) if n in html]


def blind_anonymous(owner, catalogue) -> Battle:
    """A finished anonymous battle of the owner's (blind until their vote), in their team."""
    battle = comparison(owner, catalogue[0], catalogue[1], mode=Battle.Mode.ANONYMOUS, blind=True, texts=None)
    return finish_battle(battle)


def tournament(owner, catalogue) -> Tournament:
    return start_tournament(owner, contestants=catalogue[:4], prompt="Name a colour.", params=BLIND_PARAMS,
                            seeding="given")


# --- a comparison ------------------------------------------------------------------------
def test_a_member_opens_a_colleagues_comparison_read_only(client, owner, team, colleague, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1])
    assert battle.team == team
    client.force_login(colleague)
    page = client.get(reverse("battle-detail", args=[battle.id]))
    html = page.content.decode()
    assert page.status_code == 200 and READ_ONLY in html
    assert "Read-only: owner's, in Evals. Only its owner and staff change it." in html
    assert catalogue[0].name in html and catalogue[1].name in html  # a comparison was never blind
    writes = [reverse(f"battle-{name}", args=[battle.id]) for name in ("vote", "rerun", "swap", "continue")]
    for control in ('name="outcome"', *writes, "Edit the prompt", 'id="battle-stop"', "Share read-only link"):
        assert control not in html, control
    client.force_login(owner)  # the owner still has them all, without the line
    own = client.get(reverse("battle-detail", args=[battle.id])).content.decode()
    assert READ_ONLY not in own and 'name="outcome"' in own and reverse("battle-rerun", args=[battle.id]) in own


def test_a_members_writes_on_a_comparison_are_refused_read_only(client, owner, team, colleague, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1])
    client.force_login(colleague)
    for name, data in (("battle-vote", {"outcome": "left"}), ("battle-rerun", {}), ("battle-swap", {}),
                       ("battle-continue", {"prompt": "And now?"})):
        assert client.post(reverse(name, args=[battle.id]), data).status_code == 403, name
    # Copying it into a new comparison would make it a parent: it is not filled in, and nothing fails.
    assert client.get(reverse("compare"), {"from": battle.id}).status_code == 200
    token = ApiToken.issue(colleague)
    assert api(client, "get", f"/api/v1/comparisons/{battle.id}", token).status_code == 200
    refused = api(client, "post", f"/api/v1/comparisons/{battle.id}/vote", token, {"outcome": "left"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "read_only"
    battle.refresh_from_db()
    assert battle.outcome == "" and Battle.objects.count() == 1


@pytest.mark.parametrize("who", ["stranger", "outsider"])
def test_another_teams_member_and_a_user_in_no_team_get_not_found(client, owner, team, catalogue, who, request):
    viewer = request.getfixturevalue(who)
    battle = comparison(owner, catalogue[0], catalogue[1])
    anon = blind_anonymous(owner, catalogue)
    t = tournament(owner, catalogue)
    gen = generation(owner, catalogue[0], text="Blue.")
    gen.team = team
    gen.save(update_fields=["team"])
    client.force_login(viewer)
    for url in (reverse("battle-detail", args=[battle.id]), reverse("arena-battle", args=[anon.id]),
                reverse("tournament-detail", args=[t.id]), reverse("generation-detail", args=[gen.id])):
        assert client.get(url).status_code == 404, url
    assert client.post(reverse("battle-vote", args=[battle.id]), {"outcome": "left"}).status_code == 404
    token = ApiToken.issue(viewer)
    for url in (f"/api/v1/comparisons/{battle.id}", f"/api/v1/arena/{anon.id}", f"/api/v1/tournaments/{t.id}",
                f"/api/v1/generations/{gen.id}"):
        response = api(client, "get", url, token)
        assert response.status_code == 404 and response.json()["error"]["code"] == "not_found", url


# --- an anonymous battle -----------------------------------------------------------------
def test_a_blind_anonymous_battle_names_nobody_to_a_member_until_its_owners_vote(
        client, owner, team, colleague, catalogue):
    battle = blind_anonymous(owner, catalogue)
    pair = [battle.left.model, battle.right.model]
    client.force_login(colleague)
    page = client.get(reverse("arena-battle", args=[battle.id]))
    html = page.content.decode()
    assert page.status_code == 200 and READ_ONLY in html
    assert shown_names(html, catalogue) == [] and "Model A" in html
    assert 'name="outcome"' not in html and reverse("arena-vote", args=[battle.id]) not in html
    assert reverse("arena-continue", args=[battle.id]) not in html and "show once owner votes" in html
    token = ApiToken.issue(colleague)
    body = api(client, "get", f"/api/v1/arena/{battle.id}", token).json()
    assert body["left"].get("model") is None and body["can_vote"] is False and body["can_continue"] is False
    assert not [n for n in names(catalogue) + [m.slug for m in catalogue] if n in str(body)]

    for refused in (client.post(reverse("arena-vote", args=[battle.id]), {"outcome": "left"}),
                    client.post(reverse("arena-continue", args=[battle.id]), {"prompt": "More?"})):
        assert refused.status_code == 403
    for path, data in ((f"/api/v1/arena/{battle.id}/vote", {"outcome": "left"}),
                       (f"/api/v1/arena/{battle.id}/continue", {"prompt": "More?"})):
        response = api(client, "post", path, token, data)
        assert response.status_code == 403 and response.json()["error"]["code"] == "read_only", path
    battle.refresh_from_db()
    assert not battle.revealed and battle.outcome == "" and Battle.objects.count() == 1

    client.force_login(owner)
    assert client.post(reverse("arena-vote", args=[battle.id]), {"outcome": "right"}).status_code == 302
    client.force_login(colleague)
    html = client.get(reverse("arena-battle", args=[battle.id])).content.decode()
    assert sorted(shown_names(html, catalogue)) == sorted(names(pair))
    assert f"owner's verdict: {battle.right.model.name} is better" in html and 'name="outcome"' not in html
    body = api(client, "get", f"/api/v1/arena/{battle.id}", token).json()
    assert body["right"]["model"] == battle.right.model.slug and body["can_vote"] is False


# --- a tournament ------------------------------------------------------------------------
def test_a_member_follows_a_colleagues_tournament_blind_and_without_its_controls(
        client, owner, team, colleague, catalogue):
    t = tournament(owner, catalogue)
    assert t.team == team
    match = t.current_match()
    finish_battle(match.battle)
    client.force_login(colleague)
    page = client.get(reverse("tournament-detail", args=[t.id]))
    html = page.content.decode()
    assert page.status_code == 200 and READ_ONLY in html and "Model A" in html
    assert shown_names(html, catalogue) == []
    for control in ('id="winner-form"', 'id="rerun-form"', 'id="tournament-stop"', 'id="replay-form"',
                    'id="battle-stop"'):
        assert control not in html, control
    # The match's own battle page: blind too, and judged on the tournament's page by its owner alone.
    battle_page = client.get(reverse("battle-detail", args=[match.battle_id])).content.decode()
    assert READ_ONLY in battle_page and shown_names(battle_page, catalogue) == []
    assert "Judge this match" not in battle_page

    for name, data in (("tournament-winner", {"match": match.id, "winner": "left"}),
                       ("tournament-rerun", {"match": match.id}), ("tournament-stop", {}),
                       ("tournament-resume", {}), ("tournament-replay", {"prompt": "x"})):
        assert client.post(reverse(name, args=[t.id]), data).status_code == 403, name
    token = ApiToken.issue(colleague)
    body = api(client, "get", f"/api/v1/tournaments/{t.id}", token).json()
    assert "winner" not in body and not [n for n in names(catalogue) if n in str(body)]
    for path, data in ((f"/api/v1/tournaments/{t.id}/winner", {"match": match.id, "winner": "left"}),
                       (f"/api/v1/tournaments/{t.id}/rerun", {"match": match.id})):
        response = api(client, "post", path, token, data)
        assert response.status_code == 403 and response.json()["error"]["code"] == "read_only", path
    assert Tournament.objects.get(id=t.id).current_match().id == match.id

    pick_winner(t, match, "left")  # the owner judges every match: the reveal
    play_through(t)
    html = client.get(reverse("tournament-detail", args=[t.id])).content.decode()
    assert sorted(shown_names(html, catalogue[:4])) == sorted(names(catalogue[:4]))
    assert READ_ONLY in html and 'id="replay-form"' not in html
    body = api(client, "get", f"/api/v1/tournaments/{t.id}", token).json()
    assert body["winner"]["name"] == Tournament.objects.get(id=t.id).winner.name


# --- a generation ------------------------------------------------------------------------
def test_a_member_opens_a_colleagues_generation_without_its_stop(client, owner, team, colleague, catalogue):
    gen = generation(owner, catalogue[0])  # still running: its owner sees a Stop
    gen.team = team
    gen.save(update_fields=["team"])
    client.force_login(colleague)
    html = client.get(reverse("generation-detail", args=[gen.id])).content.decode()
    assert READ_ONLY in html and 'class="stop"' not in html and "data-read-only" in html
    token = ApiToken.issue(colleague)
    response = api(client, "get", f"/api/v1/generations/{gen.id}", token)
    assert response.status_code == 200 and response.json()["id"] == str(gen.id)
    client.force_login(owner)
    own = client.get(reverse("generation-detail", args=[gen.id])).content.decode()
    assert READ_ONLY not in own and 'class="stop"' in own
