"""Teams: the access rule for a team's work (a member opens it read-only, the owner and staff in
it change it, anyone else gets the one NotFound), where new work goes (the owner's current team;
a tournament's matches and a suite run's parts: their parent's, whatever the owner switches to
meanwhile), switching, and invitations that name a team."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from arena.access import NotFound, ReadOnly
from arena.accounts.models import ApiToken, Invitation
from arena.battles.access import access_battle
from arena.generations.access import access_generation
from arena.generations.models import Generation
from arena.suite_runs.access import access_run
from arena.suite_runs.actions import start_run
from arena.suites.access import access_suite
from arena.teams import membership
from arena.teams.models import Membership, Team
from arena.tournaments.access import access_tournament
from arena.tournaments.actions import start_tournament
from tests.arena.factories import comparison, generation, play_through, suite

pytestmark = pytest.mark.django_db
KINDS = ["generation", "battle", "tournament", "suite", "suite_run"]


def user(name: str, **extra):
    return get_user_model().objects.create_user(name, password=f"{name}-pass-1", **extra)


@pytest.fixture
def teams(owner, outsider):
    """The owner and a colleague in "Search", the outsider in "Support"."""
    search, support = Team.objects.create(name="Search"), Team.objects.create(name="Support")
    colleague = user("colleague")
    for team, member in ((search, owner), (search, colleague), (support, outsider)):
        membership.add_member(team, member)
    return {"search": search, "support": support, "colleague": colleague}


@pytest.fixture
def things(teams, owner, catalogue):
    """(access function, one of the owner's objects, made while they work in Search) per kind."""
    return {
        "generation": (access_generation, _in(generation(owner, catalogue[0], text="Blue."), teams["search"])),
        "battle": (access_battle, _in(comparison(owner, catalogue[0], catalogue[3]), teams["search"])),
        "tournament": (access_tournament,
                       start_tournament(owner, contestants=catalogue[:4], prompt="Name a colour.", seeding="given")),
        "suite": (access_suite, suite(owner, "Name a colour.")),
        "suite_run": (access_run, start_run(owner, suite=suite(owner, "Name a colour."), contestants=catalogue[:2])),
    }


def _in(obj, team):
    """The factories that build rows directly leave the team empty; the actions set it (tested below)."""
    obj.team = team
    obj.save(update_fields=["team"])
    return obj


@pytest.mark.parametrize("kind", KINDS)
def test_a_member_opens_a_colleagues_work_read_only(things, teams, kind):
    access, obj = things[kind]
    assert access(teams["colleague"], obj.id, change=False) == obj
    with pytest.raises(ReadOnly) as caught:
        access(teams["colleague"], obj.id)
    assert caught.value.status == 403 and caught.value.code == "read_only"
    assert "owner's" in str(caught.value) and "only its owner and staff change it" in str(caught.value)


@pytest.mark.parametrize("kind", KINDS)
def test_the_owner_and_staff_of_the_team_change_it(things, teams, owner, kind):
    access, obj = things[kind]
    assert access(owner, obj.id) == obj
    operator = user("operator", is_staff=True)
    membership.add_member(teams["search"], operator)
    assert access(operator, obj.id) == obj


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("who", ["outsider", "loner", "staff elsewhere"])
def test_another_teams_member_a_user_in_no_team_and_staff_outside_it_get_not_found(things, kind, who, outsider):
    access, obj = things[kind]
    someone = {"outsider": outsider, "loner": user("loner"), "staff elsewhere": user("operator", is_staff=True)}[who]
    for change in (False, True):
        with pytest.raises(NotFound):
            access(someone, obj.id, change=change)


def test_a_blind_answer_stays_hidden_from_teammates_as_from_its_owner(things, teams):
    """access_generation opens only `visible()` generations: a blind battle's sides are not among them."""
    tournament = things["tournament"][1]
    side = tournament.matches.get(number=1).battle.left
    assert side.team == teams["search"]
    for who in (tournament.owner, teams["colleague"]):
        with pytest.raises(NotFound):
            access_generation(who, side.id, change=False)


def test_new_work_goes_into_the_current_team_and_a_tournament_keeps_its_own(teams, owner, catalogue):
    tournament = start_tournament(owner, contestants=catalogue[:4], prompt="Name a colour.", seeding="given")
    assert tournament.team == teams["search"]
    other = Team.objects.create(name="Research")
    membership.add_member(other, owner)
    assert membership.switch(owner, other.id) == other and membership.current_team(owner) == other
    play_through(tournament)  # its next matches start after the switch
    battles = [m.battle for m in tournament.matches.exclude(battle=None)]
    assert len(battles) == 3 and {b.team for b in battles} == {teams["search"]}
    assert {g.team for b in battles for g in (b.left, b.right)} == {teams["search"]}
    assert suite(owner, "Name a colour.").team == other  # new work: the team switched to


def test_one_current_team_and_no_switching_into_a_team_one_is_not_in(teams, owner):
    other = Team.objects.create(name="Research")
    membership.add_member(other, owner)
    assert membership.current_team(owner) == teams["search"]  # joining a second team switches nothing
    membership.switch(owner, other.id)
    assert list(Membership.objects.filter(user=owner, current=True).values_list("team__name", flat=True)) == [
        "Research"]
    for foreign in (teams["support"].id, 10**9, "not-a-number", None):
        with pytest.raises(NotFound):
            membership.switch(owner, foreign)
    assert membership.current_team(owner) == other


def test_the_switcher_in_the_header(client, teams, owner):
    other = Team.objects.create(name="Research")
    membership.add_member(other, owner)
    client.force_login(owner)
    page = client.get(reverse("tournaments")).content.decode()
    assert 'id="team-switch"' in page and "Research" in page and "Search" in page
    answer = client.post(reverse("team-switch"), {"team": other.id, "next": reverse("tournaments")})
    assert answer.status_code == 302 and answer["Location"] == reverse("tournaments")
    assert membership.current_team(owner) == other
    assert client.post(reverse("team-switch"), {"team": teams["support"].id}).status_code == 404
    answer = client.post(reverse("team-switch"), {"team": other.id, "next": "https://evil.example/"})
    assert answer["Location"] == "/"  # never away from this site
    assert client.get(reverse("team-switch")).status_code == 405
    loner = Client()
    loner.force_login(user("loner"))
    assert 'team-switch' not in loner.get(reverse("tournaments")).content.decode()


def test_an_invitation_that_names_a_team_makes_its_user_a_member_working_in_it(client, teams):
    operator = user("operator", is_staff=True)
    token, _ = Invitation.create(operator, note="Lin", team=teams["support"])
    answer = client.post(reverse("invitation-accept", args=[token]),
                         {"username": "lin", "password1": "a-long-pass-phrase-9", "password2": "a-long-pass-phrase-9"})
    assert answer.status_code == 302
    lin = get_user_model().objects.get(username="lin")
    assert membership.teams_and_current(lin) == ([teams["support"]], teams["support"])


def test_staff_name_the_team_on_the_invitations_page(client, teams):
    operator = user("operator", is_staff=True)
    client.force_login(operator)
    assert "Support" in client.get(reverse("invitations")).content.decode()
    client.post(reverse("invitations"), {"note": "Kim", "team": teams["search"].id})
    invitation = Invitation.objects.get(note="Kim")
    assert invitation.team == teams["search"]
    assert "joins Search" in client.get(reverse("invitations")).content.decode()


def test_a_teams_tags_are_suggested_to_its_members_and_to_nobody_else(teams, owner, outsider, catalogue):
    comparison(owner, catalogue[0], catalogue[3], tag="search-relevance-q7")
    assert "search-relevance-q7" in Generation.objects.tags_given(teams["colleague"])
    assert "search-relevance-q7" not in Generation.objects.tags_given(outsider)


def test_every_objects_json_says_whose_it_is_to_a_teammate(client, things, teams):
    token = ApiToken.issue(teams["colleague"])
    paths = {"generation": "/api/v1/generations/{}", "battle": "/api/v1/comparisons/{}",
             "tournament": "/api/v1/tournaments/{}", "suite": "/api/v1/suites/{}",
             "suite_run": "/api/v1/suite-runs/{}"}
    for kind, path in paths.items():
        answer = client.get(path.format(things[kind][1].id), HTTP_AUTHORIZATION=f"Bearer {token}")
        assert answer.status_code == 200, (kind, answer.content)
        assert (answer.json()["owner"], answer.json()["team"]) == ("owner", "Search"), kind
