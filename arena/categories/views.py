"""The categories page: the categories and their rules (staff add and remove them here or in the
admin, every team's or one team's), and the viewer's own prompts with the category each got and
how, which they may change (among the categories of the prompt's team)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from arena.teams import membership
from arena.teams.models import Team

from . import actions
from .access import access_assignment
from .models import Assignment, Category, Rule


@login_required
def categories(request):
    actions.settle()
    mine = Assignment.objects.filter(owner=request.user).select_related("category").order_by("-created_at")
    page = Paginator(mine, 50).get_page(request.GET.get("page"))
    every = list(Category.objects.select_related("team").prefetch_related("rules"))
    for row in page.object_list:  # each prompt may take a category of its own team's, or an everyone's
        row.choices = [c for c in every if c.team_id in (None, row.team_id)]
    team = membership.current_team(request.user)
    shown = every if request.user.is_staff else [c for c in every if c.team_id in (None, team and team.pk)]
    return render(request, "categories/categories.html", {
        "categories": shown, "page": page, "kinds": Rule.Kind.choices, "teams": Team.objects.all(),
        "rules": Rule.objects.select_related("category"), "classifier": settings.ARENA_CATEGORY_CLASSIFIER})


@require_POST
@login_required
def set_category(request, assignment_id):
    row = access_assignment(request.user, assignment_id)
    chosen = request.POST.get("category", "")
    category = Category.objects.for_team(row.team).filter(pk=chosen).first() if chosen.isdigit() else None
    if chosen and category is None:
        messages.error(request, "No such category.")
    else:
        actions.set_category(row, category)
    return redirect(f"{reverse('categories')}#assignment-{row.pk}")


@require_POST
@staff_member_required
def add_category(request):
    team_id = request.POST.get("team", "")
    team = Team.objects.filter(pk=team_id).first() if team_id.isdigit() else None
    if team_id and team is None:
        messages.error(request, "No such team.")
        return redirect("categories")
    row = Category(name=request.POST.get("name", "").strip(), description=request.POST.get("description", "").strip(),
                   team=team, position=Category.objects.count())
    _save(request, row, f"Category {row.name!r} added.")
    return redirect("categories")


@require_POST
@staff_member_required
def add_rule(request):
    category = Category.objects.filter(pk=request.POST.get("category") or 0).first() \
        if (request.POST.get("category") or "").isdigit() else None
    if category is None:
        messages.error(request, "Choose a category for the rule.")
        return redirect("categories")
    row = Rule(category=category, kind=request.POST.get("kind", ""), value=request.POST.get("value", "").strip(),
               position=Rule.objects.count())
    _save(request, row, "Rule added.")
    return redirect("categories")


@require_POST
@staff_member_required
def delete_rule(request, rule_id):
    Rule.objects.filter(pk=rule_id).delete()
    return redirect("categories")


def _save(request, row, done: str) -> None:
    try:
        row.full_clean()
    except ValidationError as exc:
        messages.error(request, " ".join(m for ms in exc.message_dict.values() for m in ms))
        return
    row.save()
    messages.success(request, done)
