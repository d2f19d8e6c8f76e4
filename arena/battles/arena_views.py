"""The anonymous battle pages (/arena/): write a prompt, judge two answers the app chose, then
see who they were. The rule and the services: arena/battles/anonymous.py, arena/battles/draw.py."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from arena.access import may_change
from arena.generations.limits import PageRefusal
from inference.protocol import ParamError

from . import actions, anonymous, fair, presenting
from .access import access_battle
from .forms import ArenaForm, FollowUpForm, VoteForm
from .models import Battle


def in_draw() -> int:
    """How many catalogue entries the draw may take (a count names nobody)."""
    return anonymous.in_draw()


@login_required
@require_http_methods(["GET", "POST"])
def arena(request):
    form = ArenaForm(request.POST or None)
    refusal = PageRefusal(form, anew="battle")
    if request.method == "POST" and form.is_valid():
        try:
            with refusal:
                return redirect(actions.start_anonymous(request.user, prompt=form.cleaned_data["prompt"],
                                                        params=form.params, tag=form.cleaned_data.get("tag") or ""))
        except anonymous.NoPair as exc:
            form.add_error(None, exc.message)
        except ParamError as exc:
            form.add_error(None, "; ".join(f"{k}: {v}" for k, v in exc.errors.items()))
    recent = (Battle.objects.filter(owner=request.user, mode=Battle.Mode.ANONYMOUS)
              .select_related("left__model", "right__model")[:10])
    response = render(request, "battles/arena.html", {"form": form, "recent": recent, "in_draw": in_draw(),
                                                      "default_limit": fair.token_limit()},
                      status=400 if form.errors else 200)
    return refusal.page(response)


def _page(request, battle: Battle, *, follow_up: FollowUpForm | None = None, status: int = 200, **extra):
    """`can_change`: false for a teammate, who reads it (blind as to its owner until the vote) and cannot vote."""
    can_change = may_change(request.user, battle)
    return render(request, "battles/anonymous.html", {
        "battle": battle, "shown": presenting.shown(battle), "follow_up": follow_up or FollowUpForm(),
        "can_change": can_change, "can_vote": can_change and anonymous.vote_problem(battle) == "",
        "reason": anonymous.REASON_WORDS.get(battle.pick_reason, ""),
        "limit_said": fair.limit_said(battle), **extra}, status=status)


@login_required
@vary_on_headers("HX-Request")
def arena_battle(request, battle_id):
    return _page(request, access_battle(request.user, battle_id, mode=Battle.Mode.ANONYMOUS, change=False))


@login_required
@require_POST
def arena_vote(request, battle_id):
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.ANONYMOUS)
    form = VoteForm(request.POST, team=battle.team)
    valid = form.is_valid()
    note_error = any(k in form.errors for k in ("reasons", "comment"))  # said beside its field
    problem = anonymous.vote_problem(battle) or ("" if valid or note_error else "Choose one of the four verdicts.")
    if not problem and not note_error and not actions.vote(battle, form.cleaned_data["outcome"], form.note):
        problem = presenting.shown(battle).refusal or "Choose one of the four verdicts."
    if problem or note_error:
        return _page(request, battle, status=400 if note_error and not problem else 409, vote_error=problem,
                     note_form=form)
    return redirect(battle)


@login_required
@require_POST
def arena_continue(request, battle_id):
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.ANONYMOUS)
    form = FollowUpForm(request.POST)
    if battle.outcome or battle.revealed:
        form.add_error(None, "This battle is judged: start a new one to go on.")
    elif not anonymous.can_continue(battle):
        form.add_error(None, "Both answers must be complete before the conversation can go on.")
    if form.errors or not form.is_valid():
        return _page(request, battle, follow_up=form, status=400)
    refusal = PageRefusal(form, anew="battle")
    with refusal:
        return redirect(actions.follow_up_anonymous(battle, form.cleaned_data["prompt"]))
    return refusal.page(_page(request, battle, follow_up=form))
