"""The tournament pages. Every form posts and redirects, so each works without
JavaScript; with it, the current match streams over the battle's WebSocket."""

from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers

from arena.access import may_change
from arena.battles import presenting
from arena.catalogue.models import ModelEntry
from arena.generations.limits import PageRefusal

from . import actions, display
from .access import access_tournament
from .forms import MatchForm, ReplayForm, TournamentForm, WinnerForm
from .models import Tournament, TournamentError

REPLAY_AFTER_END = "A tournament can be replayed with another prompt once it has ended."


def _get_match(tournament: Tournament, form) -> "display.Match":
    match = tournament.matches.select_related("battle__left", "battle__right").filter(
        id=form.cleaned_data["match"]).first()
    if match is None:
        raise TournamentError("No such match in this tournament.")
    return match


@login_required
def tournament_list(request):
    tournaments = Tournament.objects.filter(owner=request.user).select_related("winner")[:50]
    return render(request, "tournaments/list.html", {"tournaments": tournaments})


@login_required
@require_http_methods(["GET", "POST"])
def tournament_new(request):
    form = TournamentForm(request.POST or None, initial=_initial())
    refusal = PageRefusal(form)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            with refusal:
                return redirect(actions.start_tournament(
                    request.user, contestants=data["contestants"], prompt=data["prompt"],
                    system_prompt=data["system_prompt"], params=data["params"], seeding=data["seeding"],
                    tag=data["tag"]))
        except TournamentError as exc:
            form.add_error(None, str(exc))
    response = render(request, "tournaments/new.html", {"form": form}, status=400 if form.errors else 200)
    return refusal.page(response)


def _initial() -> dict:
    """The first four enabled catalogue entries preselected, chat models before base models."""
    enabled = list(ModelEntry.objects.enabled().order_by("base", "name")[:4])
    initial = {f"contestant_{i + 1}": m for i, m in enumerate(enabled)} if len(enabled) == 4 else {}
    return {**initial, "seeding": Tournament.Seeding.RANDOM}


@login_required
@vary_on_headers("HX-Request")
def tournament_detail(request, tournament_id):
    tournament = access_tournament(request.user, tournament_id, change=False)  # its team's members open it read-only
    return _render_detail(request, tournament)


def _render_detail(request, tournament, *, error: str = "", replay_form=None, status: int = 200):
    current = tournament.current_match() if not tournament.revealed else None
    battle = current.battle if current else None
    return render(request, "tournaments/tournament.html", {
        "tournament": tournament,
        "columns": display.bracket_view(tournament),
        "current": current,
        "current_labels": (current.slot_label("left"), current.slot_label("right")) if current else (),
        "battle": battle,
        "shown": presenting.shown(battle) if battle else None,
        "error": error,
        "replay_form": replay_form or ReplayForm(),
        "played": tournament.matches.filter(winner__isnull=False).count(),
        "decision": display.decision_summary(tournament, request.user),
        "decision_scope": display.DECISION_SCOPE,
        "can_change": may_change(request.user, tournament),  # false: a teammate's view, without its controls
    }, status=status)


def _act(request, tournament_id, action):
    """Run an action on the owner's tournament; on a refusal, the page with the reason (409,
    or 429 when starting the match's answers would pass a per-user limit: nothing is kept)."""
    tournament = access_tournament(request.user, tournament_id)
    refusal = PageRefusal()
    try:
        with refusal:
            action(tournament)
            return redirect(tournament)
    except TournamentError as exc:
        return _render_detail(request, tournament, error=str(exc), status=409)
    tournament.refresh_from_db()  # the action's transaction was rolled back
    return refusal.page(_render_detail(request, tournament, error=refusal.message))


@login_required
@require_POST
def tournament_winner(request, tournament_id):
    def pick(tournament):
        form = WinnerForm(request.POST, team=tournament.team)
        if not form.is_valid():
            raise TournamentError(" ".join(str(e) for errs in form.errors.values() for e in errs))
        actions.pick_winner(tournament, _get_match(tournament, form), form.cleaned_data["winner"],
                            form.cleaned_data.get("battle"), form.note)

    return _act(request, tournament_id, pick)


@login_required
@require_POST
def tournament_rerun(request, tournament_id):
    form = MatchForm(request.POST)

    def rerun(tournament):
        if not form.is_valid():
            raise TournamentError("Say which match to run again.")
        actions.rerun_match(tournament, _get_match(tournament, form))

    return _act(request, tournament_id, rerun)


@login_required
@require_POST
def tournament_stop(request, tournament_id):
    return _act(request, tournament_id, actions.stop_tournament)


@login_required
@require_POST
def tournament_resume(request, tournament_id):
    return _act(request, tournament_id, actions.resume_tournament)


@login_required
@require_POST
def tournament_replay(request, tournament_id):
    tournament = access_tournament(request.user, tournament_id)
    if not tournament.revealed:  # the page offers it only then: a replay mid-way would leave this one hanging
        return _render_detail(request, tournament, error=REPLAY_AFTER_END, status=409)
    form = ReplayForm(request.POST)
    if not form.is_valid():
        return _render_detail(request, tournament, replay_form=form, status=400)
    refusal = PageRefusal(form)
    try:
        with refusal:
            return redirect(actions.replay_tournament(tournament, form.cleaned_data["prompt"],
                                                      params={**tournament.params, **form.cleaned_data["params"]}))
    except TournamentError as exc:  # a contestant was disabled since
        return _render_detail(request, tournament, error=str(exc), status=409)
    return refusal.page(_render_detail(request, tournament, replay_form=form))
