"""A team's own vote reasons: offered on its battles' votes beside every team's, never on another
team's; a vote of another team that names one is refused as an unknown reason."""

import pytest

from arena.accounts.models import ApiToken
from arena.battles.forms import VoteForm, note_form
from arena.battles.models import ReasonTag
from arena.teams import membership
from arena.teams.models import Team
from tests.arena.factories import comparison

pytestmark = pytest.mark.django_db


@pytest.fixture
def teams(owner, outsider):
    search, support = Team.objects.create(name="Search"), Team.objects.create(name="Support")
    membership.add_member(search, owner)
    membership.add_member(support, outsider)
    ReasonTag.objects.get_or_create(slug="clearer", defaults={"label": "clearer"})  # every team's (a flushed
    ReasonTag.objects.create(slug="stale-index-q3", label="Stale index", team=search)  # database has no defaults)
    return search, support


def offered(form) -> set[str]:
    return {slug for slug, _label in form.fields["reasons"].choices}


def test_a_teams_reason_is_offered_on_its_battles_only(teams, owner, outsider, catalogue):
    everyones = {slug for slug, _ in ReasonTag.offered()}
    assert everyones and "stale-index-q3" not in everyones
    ours = comparison(owner, catalogue[0], catalogue[3])
    theirs = comparison(outsider, catalogue[0], catalogue[3])
    assert offered(note_form(ours)) == everyones | {"stale-index-q3"}
    assert offered(note_form(theirs)) == everyones
    assert offered(note_form(None, teams[0])) == everyones | {"stale-index-q3"}  # a suite run's pair


def test_a_vote_naming_another_teams_reason_is_refused(teams, catalogue):
    form = VoteForm({"outcome": "left", "reasons": ["stale-index-q3"]}, team=teams[1])
    assert not form.is_valid() and "reasons" in form.errors
    form = VoteForm({"outcome": "left", "reasons": ["stale-index-q3"]}, team=teams[0])
    assert form.is_valid(), form.errors


def test_the_api_takes_a_teams_reason_on_its_battles_and_refuses_it_elsewhere(client, teams, owner, outsider,
                                                                             catalogue):
    ours, theirs = comparison(owner, catalogue[0], catalogue[3]), comparison(outsider, catalogue[0], catalogue[3])
    body = {"outcome": "left", "reasons": ["stale-index-q3"]}
    answer = client.post(f"/api/v1/comparisons/{theirs.id}/vote", body, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(outsider)}")
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "unknown_reason"
    answer = client.post(f"/api/v1/comparisons/{ours.id}/vote", body, content_type="application/json",
                         HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(owner)}")
    assert answer.status_code == 200, answer.content
    ours.refresh_from_db()
    assert ours.reasons == ["stale-index-q3"]
