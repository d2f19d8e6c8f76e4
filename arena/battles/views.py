from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from arena.access import NotFound
from arena.catalogue.models import ModelEntry
from arena.generations.limits import PageRefusal

from . import services
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
            return redirect(services.start_comparison(request.user, form.cleaned_data, redo=redo))
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
    """The battle `?from=` or "continues" names (both optional), if a new comparison may copy it; else None."""
    try:
        return access_battle(request.user, battle_id, blind=False) if battle_id else None
    except NotFound:
        return None


@login_required
@vary_on_headers("HX-Request")
def battle_detail(request, battle_id):
    battle = access_battle(request.user, battle_id)
    if battle.mode == Battle.Mode.ANONYMOUS:  # judged, continued and revealed on its own page
        return redirect(battle)
    return render(request, "battles/battle.html", {"battle": battle, "follow_up": FollowUpForm()})


@login_required
@require_POST
def battle_vote(request, battle_id):
    battle = access_battle(request.user, battle_id)
    if battle.mode == Battle.Mode.TOURNAMENT:  # judged on its tournament's page, where the winner advances
        return HttpResponse("A tournament match is judged on its tournament's page.", status=409,
                            content_type="text/plain")
    if battle.mode == Battle.Mode.ANONYMOUS:
        return HttpResponse("An anonymous battle is judged on its own page.", status=409, content_type="text/plain")
    form = VoteForm(request.POST)
    ok = form.is_valid() and battle.vote(form.cleaned_data["outcome"])
    # Refused while the battle takes no verdict: the buttons' note says why (vote_buttons), so
    # the error only says so again in words that call for attention.
    problem = "" if ok else (battle.vote_refusal or CHOOSE_A_VERDICT)
    status = 200 if ok else 400
    if request.htmx:
        return render(request, "battles/battle.html#verdict", {"battle": battle, "vote_error": problem}, status=status)
    return redirect(battle) if ok else render(request, "battles/battle.html", {
        "battle": battle, "follow_up": FollowUpForm(), "vote_error": problem}, status=400)


def _start_from(request, battle, start, follow_up=None):
    """Redirect to the battle `start()` begins; refused (a limit: 429, a conversation too long:
    400), this battle's page again with the reason: beside the follow-up form when it was a
    follow-up, else the buttons."""
    refusal = PageRefusal(follow_up)
    with refusal:
        return redirect(start())
    context = {"battle": battle, "follow_up": follow_up or FollowUpForm()}
    if follow_up is None:
        context["action_error"] = refusal.message
    return refusal.page(render(request, "battles/battle.html", context))


@login_required
@require_POST
def battle_rerun(request, battle_id):
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.COMPARISON)
    return _start_from(request, battle, lambda: services.rerun(battle))


@login_required
@require_POST
def battle_swap(request, battle_id):
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.COMPARISON)
    return _start_from(request, battle, lambda: services.rerun(battle, swap=True))


@login_required
@require_POST
def battle_continue(request, battle_id):
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.COMPARISON)
    form = FollowUpForm(request.POST)
    if not battle.answers_stored or not battle.votable:  # stored: the follow-up copies both answers' text
        form.add_error(None, "Both answers must be complete before the conversation can go on.")
    if form.errors or not form.is_valid():
        return render(request, "battles/battle.html", {"battle": battle, "follow_up": form}, status=400)
    return _start_from(request, battle, lambda: services.follow_up(battle, form.cleaned_data["prompt"]), form)
