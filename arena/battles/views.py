from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from arena.access import NotFound, ReadOnly, may_change
from arena.catalogue.models import ModelEntry
from arena.generations.limits import PageRefusal

from . import actions, presenting
from .access import access_battle
from .forms import ComparisonForm, FollowUpForm, VoteForm
from .models import Battle

CHOOSE_A_VERDICT = "Choose one of the four verdicts."


@login_required
@require_http_methods(["GET", "POST"])
def compare(request):
    form = ComparisonForm(request.POST or None, initial=_initial(request))
    refusal = PageRefusal(form)
    if request.method == "POST" and form.is_valid():
        redo = _battle_to_copy(request, form.cleaned_data.get("continues"))
        with refusal:
            return redirect(actions.start_comparison(request.user, form.cleaned_data, redo=redo))
    recent = Battle.objects.filter(owner=request.user, mode=Battle.Mode.COMPARISON).select_related(
        "left__model", "right__model")[:10]
    continuing = _battle_to_copy(request, form["continues"].value())
    response = render(request, "battles/compare.html", {"form": form, "recent": recent, "continuing": continuing},
                      status=400 if form.errors else 200)
    return refusal.page(response)


def _initial(request) -> dict:
    """Two different models preselected; `?from=<battle>` fills in one of the user's battles to edit."""
    battle = _battle_to_copy(request, request.GET.get("from"))
    if battle:
        return {"prompt": battle.prompt, "tag": battle.tag,
                "continues": battle.id if battle.left.history or battle.right.history else None,
                "left_model": battle.left.model, "right_model": battle.right.model,
                "left_system_prompt": battle.left.system_prompt,
                "right_system_prompt": battle.right.system_prompt,
                **{k: battle.left.params.get(k) for k in ("top_p", "max_new_tokens", "seed")},
                "left_temperature": battle.left.params.get("temperature"),
                "right_temperature": battle.right.params.get("temperature")}
    enabled = list(ModelEntry.objects.enabled()[:2])
    return {"left_model": enabled[0], "right_model": enabled[-1]} if enabled else {}


def _battle_to_copy(request, battle_id) -> Battle | None:
    """The battle `?from=` or "continues" names (both optional), if a new comparison may copy it; else None.
    Only one's own: the copy becomes its child (its lineage), which a teammate's read-only view may not add."""
    try:
        return access_battle(request.user, battle_id, blind=False) if battle_id else None
    except (NotFound, ReadOnly):
        return None


def _page(request, battle: Battle, template: str = "battles/battle.html", *, status: int = 200, **context):
    """The battle's page (or a partial of it) with what the battle shows now (arena/battles/presenting.py);
    `can_change`: false for a teammate, who sees it without its controls."""
    return render(request, template, {"battle": battle, "shown": presenting.shown(battle),
                                      "can_change": may_change(request.user, battle), **context}, status=status)


@login_required
@vary_on_headers("HX-Request")
def battle_detail(request, battle_id):
    battle = access_battle(request.user, battle_id, change=False)  # its team's members open it read-only
    if battle.mode == Battle.Mode.ANONYMOUS:  # judged, continued and revealed on its own page
        return redirect(battle)
    return _page(request, battle, follow_up=FollowUpForm())


@login_required
@require_POST
def battle_vote(request, battle_id):
    battle = access_battle(request.user, battle_id)
    if battle.mode == Battle.Mode.TOURNAMENT:  # judged on its tournament's page, where the winner advances
        return HttpResponse("A tournament match is judged on its tournament's page.", status=409,
                            content_type="text/plain")
    if battle.mode == Battle.Mode.ANONYMOUS:
        return HttpResponse("An anonymous battle is judged on its own page.", status=409, content_type="text/plain")
    form = VoteForm(request.POST, team=battle.team)
    ok = form.is_valid() and actions.vote(battle, form.cleaned_data["outcome"], form.note)
    # Refused while the battle takes no verdict: the buttons' note says why (vote_buttons), so
    # the error only says so again in words that call for attention. A bad note (a comment too
    # long) is said beside its field, what was typed kept.
    note_errors = {k: v for k, v in form.errors.items() if k in ("reasons", "comment")}
    problem = "" if ok else ("" if note_errors else presenting.shown(battle).refusal or CHOOSE_A_VERDICT)
    status = 200 if ok else 400
    note = None if ok else form
    if request.htmx:
        return _page(request, battle, "battles/battle.html#verdict", vote_error=problem, note_form=note, status=status)
    return redirect(battle) if ok else _page(request, battle, follow_up=FollowUpForm(), vote_error=problem,
                                             note_form=note, status=400)


def _start_from(request, battle, start, follow_up=None):
    """Redirect to the battle `start()` begins; refused (a limit: 429, a conversation too long:
    400), this battle's page again with the reason: beside the follow-up form when it was a
    follow-up, else the buttons."""
    refusal = PageRefusal(follow_up)
    with refusal:
        return redirect(start())
    action_error = refusal.message if follow_up is None else None
    return refusal.page(_page(request, battle, follow_up=follow_up or FollowUpForm(), action_error=action_error))


@login_required
@require_POST
def battle_rerun(request, battle_id):
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.COMPARISON)
    return _start_from(request, battle, lambda: actions.rerun(battle))


@login_required
@require_POST
def battle_swap(request, battle_id):
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.COMPARISON)
    return _start_from(request, battle, lambda: actions.rerun(battle, swap=True))


@login_required
@require_POST
def battle_continue(request, battle_id):
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.COMPARISON)
    form = FollowUpForm(request.POST)
    # Stored: the follow-up copies both answers' text.
    if not battle.answers_stored or not presenting.shown(battle).votable:
        form.add_error(None, "Both answers must be complete before the conversation can go on.")
    if form.errors or not form.is_valid():
        return _page(request, battle, follow_up=form, status=400)
    return _start_from(request, battle, lambda: actions.follow_up(battle, form.cleaned_data["prompt"]), form)
