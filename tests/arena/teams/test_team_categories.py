"""A team's own categories: its prompts are placed among every team's categories and its own,
never another team's (by rule and for the classifier's list of names); its members see them on
the categories page and the API; an owner sets a prompt's category among its team's only."""

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from arena.accounts.models import ApiToken
from arena.categories import actions
from arena.categories.models import Assignment, Category, Rule
from arena.generations.models import Generation
from arena.teams import membership
from arena.teams.models import Team
from tests.arena.factories import comparison

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(owner, outsider):
    search, support = Team.objects.create(name="Search"), Team.objects.create(name="Support")
    membership.add_member(search, owner)
    membership.add_member(support, outsider)
    everyone = Category.objects.create(name="coding", description="Programming questions")
    ranking = Category.objects.create(name="ranking", description="Search relevance", team=search)
    refunds = Category.objects.create(name="refunds", description="Money back", team=support)
    Rule.objects.create(category=ranking, kind="keywords", value="relevance", position=0)
    Rule.objects.create(category=refunds, kind="keywords", value="relevance, refund", position=1)
    Rule.objects.create(category=everyone, kind="keywords", value="python", position=2)
    return {"search": search, "support": support, "everyone": everyone, "ranking": ranking, "refunds": refunds}


def placed(battle) -> Assignment:
    return Assignment.objects.get(subject_kind="battle", subject_id=str(battle.id))


def test_a_prompt_is_placed_among_its_teams_categories_only(world, owner, outsider, catalogue):
    smollm, gemma = catalogue[0], catalogue[3]
    assert placed(comparison(owner, smollm, gemma, prompt="Judge the relevance of this")).category == world["ranking"]
    assert placed(comparison(outsider, smollm, gemma, prompt="Judge the relevance of this")).category == \
        world["refunds"]
    assert placed(comparison(owner, smollm, gemma, prompt="A python question")).category == world["everyone"]
    row = placed(comparison(owner, smollm, gemma, prompt="I want a refund", texts=None))
    assert row.team == world["search"] and row.source == Assignment.Source.PENDING  # no rule of Search matched
    question = Generation.objects.get(run_kind=actions.CLASSIFY_KIND).prompt
    assert "ranking" in question and "coding" in question and "refunds" not in question


def test_the_classifiers_answer_is_read_among_the_teams_names(world, owner, catalogue):
    row = placed(comparison(owner, catalogue[0], catalogue[3], prompt="I want a refund", texts=None))
    gen = row.generation
    gen.finish(Generation.Status.DONE, text='{"category": "refunds"}', finish_reason="stop", metrics={})
    actions.settle()
    row.refresh_from_db()
    assert row.category is None and row.source == Assignment.Source.NONE  # another team's name is no answer


def test_members_see_their_teams_categories_and_set_only_those(client, world, owner, catalogue):
    row = placed(comparison(owner, catalogue[0], catalogue[3], prompt="A python question"))
    client.force_login(owner)
    page = client.get(reverse("categories")).content.decode()
    assert 'data-category="ranking"' in page and 'data-category="coding"' in page
    assert 'data-category="refunds"' not in page
    client.post(reverse("category-set", args=[row.pk]), {"category": world["refunds"].pk})
    row.refresh_from_db()
    assert row.category == world["everyone"]  # unchanged: not a category of its team
    client.post(reverse("category-set", args=[row.pk]), {"category": world["ranking"].pk})
    row.refresh_from_db()
    assert row.category == world["ranking"] and row.source == Assignment.Source.OWNER


def test_staff_add_a_teams_category_and_the_api_lists_a_callers_teams(client, world, outsider):
    operator = get_user_model().objects.create_user("operator", password="pw", is_staff=True)
    client.force_login(operator)
    client.post(reverse("category-add"), {"name": "ranking", "description": "Theirs", "team": world["support"].pk})
    assert Category.objects.filter(name="ranking").count() == 2  # one name, two teams
    client.post(reverse("category-add"), {"name": "coding", "description": "twice for everyone"})
    assert Category.objects.filter(name="coding").count() == 1  # refused: every team's names are unique
    assert client.post(reverse("category-add"), {"name": "x", "team": "999999"}).status_code == 302
    assert not Category.objects.filter(name="x").exists()
    listed = client.get(reverse("api-categories"), HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(outsider)}").json()
    assert {(c["name"], c["team"]) for c in listed["categories"]} == {
        ("coding", None), ("refunds", "Support"), ("ranking", "Support")}
    assert {r["category"] for r in listed["rules"]} == {"coding", "refunds"}


def test_the_leaderboards_columns_are_every_teams_categories_and_the_viewers_teams(client, world, owner, outsider):
    def columns(user) -> set:
        answer = client.get("/api/v1/leaderboard/categories", HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(user)}")
        assert answer.status_code == 200, answer.content
        return {c["name"] for c in answer.json()["categories"]}

    assert columns(owner) == {"coding", "ranking", None}
    assert columns(outsider) == {"coding", "refunds", None}  # another team's category names are its own


def test_a_battles_json_names_its_prompts_category(client, world, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[3], prompt="Judge the relevance of this")
    answer = client.get(f"/api/v1/comparisons/{battle.id}", HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(owner)}")
    assert answer.json()["category"] == "ranking"
    other = comparison(owner, catalogue[0], catalogue[3], prompt="Nothing matches this", texts=None)
    Assignment.objects.filter(subject_id=str(other.id)).delete()
    answer = client.get(f"/api/v1/comparisons/{other.id}", HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(owner)}")
    assert answer.json()["category"] is None
