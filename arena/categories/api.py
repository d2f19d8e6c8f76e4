"""GET /api/v1/categories: the categories, their rules in order, and the classifier."""

from django.conf import settings
from django.http import JsonResponse

from arena.accounts.bearer import token_required
from arena.api.http import methods
from arena.teams import membership

from .models import Category, Rule


def category_json(c: Category) -> dict:
    return {"id": c.pk, "name": c.name, "description": c.description, "team": c.team.name if c.team else None}


@methods("GET")
@token_required
def categories(request):
    """Those of the caller's current team: every team's and its own."""
    cats = list(Category.objects.for_team(membership.current_team(request.user)).select_related("team"))
    return JsonResponse({
        "categories": [category_json(c) for c in cats],
        "rules": [{"id": r.pk, "category": r.category.name, "kind": r.kind, "value": r.value, "position": r.position}
                  for r in Rule.objects.filter(category__in=cats).select_related("category")],
        "classifier": settings.ARENA_CATEGORY_CLASSIFIER,
    })
