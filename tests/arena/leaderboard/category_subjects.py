"""Verdicts whose answer is known, by kind of prompt: two categories with keyword rules, model A
winning every coding prompt and model B every support prompt (30 each), for the leaderboard's
per-category table and "prompts like this one". Used by tests/arena/leaderboard/test_by_category.py
and photographed by tests/live/test_categories_browser.py through `manage.py shell -c`."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from arena.battles.actions import vote
from arena.catalogue.models import ModelEntry
from arena.categories.models import Category, Rule
from tests.arena.factories import comparison

CODING = ["Write a Python function that sorts a list of {}", "Fix the bug in this Python function about {}"]
SUPPORT = ["A customer asks for a refund on {}: write a polite reply", "Reply to a customer whose {} order is late"]
THINGS = ["dates", "names", "invoices", "photos", "songs", "emails", "tickets", "parcels", "shoes", "books",
          "lamps", "maps", "cups", "pens", "bikes"]


def seed_verdicts(owner, a: ModelEntry, b: ModelEntry) -> None:
    coding = Category.objects.create(name="coding", position=0, description="Writing or fixing code")
    support = Category.objects.create(name="support replies", position=1, description="Answers to customers")
    Rule.objects.create(category=coding, kind="keywords", value="python", position=0)
    Rule.objects.create(category=support, kind="keywords", value="customer", position=1)
    for i in range(30):
        thing = THINGS[i % len(THINGS)]
        for templates, winner in ((CODING, a), (SUPPORT, b)):
            left, right = (a, b) if i % 2 else (b, a)  # each on either side
            battle = comparison(owner, left, right, prompt=templates[i % 2].format(thing))
            assert vote(battle, "left" if left == winner else "right")


def seed(username: str) -> dict[str, str]:
    """The verdicts, owned by `username`, between the catalogue's first two enabled entries."""
    owner = get_user_model().objects.get(username=username)
    a, b = ModelEntry.objects.filter(enabled=True).order_by("pk")[:2]
    seed_verdicts(owner, a, b)
    return {"a": a.slug, "b": b.slug}


def unseed(username: str) -> None:
    """Remove the categories and `username` with every verdict of theirs (their rows cascade)."""
    Category.objects.all().delete()
    get_user_model().objects.filter(username=username).delete()
