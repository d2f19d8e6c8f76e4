"""A prompt's category: by rule at a battle's or a suite prompt's creation, else the classifier
queued (constrained to the names) and its reply settled, the owner's change, and who may make it."""

import json

import pytest
from django.urls import reverse

from arena.battles.actions import start_anonymous
from arena.categories import actions
from arena.categories.models import Assignment, Category, Rule
from arena.generations.models import Generation
from tests.arena.factories import comparison, finish, suite

pytestmark = pytest.mark.django_db


@pytest.fixture
def kinds(db):
    coding = Category.objects.create(name="coding", description="Programming questions", position=0)
    support = Category.objects.create(name="support replies", description="Answers to customers", position=1)
    Rule.objects.create(category=coding, kind="keywords", value="python, function", position=0)
    Rule.objects.create(category=support, kind="regex", value=r"(?i)\brefund\b", position=1)
    Rule.objects.create(category=support, kind="tag", value="helpdesk", position=2)
    return coding, support


def of_battle(battle) -> Assignment:
    return Assignment.objects.get(subject_kind="battle", subject_id=str(battle.id))


def test_no_categories_no_rows_and_no_classifier(owner, catalogue):
    comparison(owner, catalogue[0], catalogue[3], prompt="Write a python function")
    assert not Assignment.objects.exists()
    assert not Generation.objects.filter(run_kind=actions.CLASSIFY_KIND).exists()


def test_keyword_regex_and_tag_rules_place_battles_and_suite_prompts(owner, catalogue, kinds):
    coding, support = kinds
    smollm, gemma = catalogue[0], catalogue[3]
    assert of_battle(comparison(owner, smollm, gemma, prompt="Write a Python function")).category == coding
    by_regex = of_battle(comparison(owner, smollm, gemma, prompt="Can I get a REFUND please?"))
    assert (by_regex.category, by_regex.source, by_regex.how) == (support, "rule", "by rule")
    assert of_battle(comparison(owner, smollm, gemma, prompt="Hello there", tag="helpdesk")).category == support
    s = suite(owner, "Write a function that adds", {"prompt": "Anything", "tags": ["helpdesk"]})
    placed = {a.prompt: a.category for a in Assignment.objects.filter(subject_kind="suite_prompt")}
    assert placed == {"Write a function that adds": coding, "Anything": support}
    assert {a.subject_id for a in Assignment.objects.filter(subject_kind="suite_prompt")} == \
        {str(p.pk) for p in s.ordered_prompts()}
    assert not Generation.objects.filter(run_kind=actions.CLASSIFY_KIND).exists()


def test_anonymous_battles_are_placed_too(owner, catalogue, kinds):
    battle = start_anonymous(owner, prompt="python please")
    assert of_battle(battle).category == kinds[0]


def test_no_rule_matches_the_classifier_is_queued_constrained_to_the_names(owner, catalogue, kinds):
    battle = comparison(owner, catalogue[0], catalogue[3], prompt="How do I bake bread?", texts=None)
    row = of_battle(battle)
    assert row.source == "pending" and row.classifier.slug == "smollm2-135m"
    gen = row.generation
    assert gen.run_kind == actions.CLASSIFY_KIND and gen.run_id == row.id and gen.owner == owner
    assert gen.params["json_schema"]["properties"]["category"]["enum"] == ["coding", "support replies", "none"]
    assert gen.params["temperature"] == 0.0 and "How do I bake bread?" in gen.prompt
    # The same owner's same prompt again (a tournament's matches, a rerun) reuses the reply.
    again = of_battle(comparison(owner, catalogue[0], catalogue[3], prompt="How do I bake bread?", texts=None))
    assert again.generation_id == gen.id
    assert Generation.objects.filter(run_kind=actions.CLASSIFY_KIND).count() == 1
    finish(gen, json.dumps({"category": "support replies"}))
    assert actions.settle() == 2
    row.refresh_from_db()
    assert (row.category, row.source, row.how) == (kinds[1], "classifier", "by the classifier")


def test_the_classifier_saying_none_or_failing_leaves_no_category_and_says_why(owner, catalogue, kinds):
    first = of_battle(comparison(owner, catalogue[0], catalogue[3], prompt="Tell me a joke", texts=None))
    second = of_battle(comparison(owner, catalogue[0], catalogue[3], prompt="A haiku", texts=None))
    finish(first.generation, '{"category": "none"}')
    second.generation.finish(Generation.Status.FAILED, text="", reason="the model failed to load")
    actions.settle()
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.category, first.source) == (None, "none") and "no category fits" in first.note
    assert second.category is None and "the model failed to load" in second.note


def test_without_a_classifier_in_the_catalogue_the_prompt_has_none_and_says_so(owner, catalogue, kinds, settings):
    settings.ARENA_CATEGORY_CLASSIFIER = "no-such-entry"
    row = of_battle(comparison(owner, catalogue[0], catalogue[3], prompt="Nothing matches"))
    assert row.source == "none" and "no-such-entry" in row.note


def test_the_owner_changes_a_category_and_it_stands_another_user_gets_a_404(client, owner, outsider, catalogue,
                                                                             kinds):
    row = of_battle(comparison(owner, catalogue[0], catalogue[3], prompt="Something else", texts=None))
    url = reverse("category-set", args=[row.pk])
    client.force_login(outsider)
    assert client.post(url, {"category": kinds[0].pk}).status_code == 404
    client.force_login(owner)
    assert client.post(url, {"category": kinds[0].pk}).status_code == 302
    finish(row.generation, '{"category": "support replies"}')
    actions.settle()  # a late reply never overwrites the owner's choice
    row.refresh_from_db()
    assert (row.category, row.source) == (kinds[0], "owner")
    page = client.get(reverse("categories")).content.decode()
    assert "set by its owner" in page and f'id="assignment-{row.pk}"' in page
    client.force_login(outsider)
    assert f'id="assignment-{row.pk}"' not in client.get(reverse("categories")).content.decode()


def test_staff_add_categories_and_rules_a_bad_regex_is_refused_others_cannot(client, owner, db):
    from django.contrib.auth import get_user_model

    staff = get_user_model().objects.create_user("staffer", password="staff-pass-1", is_staff=True)
    client.force_login(owner)
    client.post(reverse("category-add"), {"name": "coding"})
    assert not Category.objects.exists()
    client.force_login(staff)
    client.post(reverse("category-add"), {"name": "coding", "description": "Code"})
    cat = Category.objects.get(name="coding")
    response = client.post(reverse("category-rule-add"), {"category": cat.pk, "kind": "regex", "value": "(unclosed"},
                           follow=True)
    assert "Not a valid regex" in response.content.decode() and not Rule.objects.exists()
    client.post(reverse("category-rule-add"), {"category": cat.pk, "kind": "keywords", "value": "python"})
    assert Rule.objects.get().value == "python"


def test_the_api_lists_categories_and_rules(client, token, kinds):
    body = client.get(reverse("api-categories"), HTTP_AUTHORIZATION=f"Bearer {token}").json()
    assert [c["name"] for c in body["categories"]] == ["coding", "support replies"]
    assert [r["kind"] for r in body["rules"]] == ["keywords", "regex", "tag"]
    assert client.get(reverse("api-categories")).status_code == 401
