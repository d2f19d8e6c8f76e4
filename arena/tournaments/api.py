"""The tournament JSON API: the same rules and the same blindness as the pages.

Until a tournament ends its state names no contestant: slots carry neutral labels,
battle sides "Model A"/"Model B", with their status and text but no model, speed or
failure reason. The contestants a client sent are not echoed back."""

from django.http import JsonResponse

from arena import conversations
from arena.accounts.bearer import token_required
from arena.api.http import created, error, form_error, json_body, methods
from arena.api.params import NotAnObject, params_object
from arena.battles.api import api_note

from . import actions, display
from .access import access_tournament
from .forms import MAX_CONTESTANTS, TournamentForm
from .models import Tournament, TournamentError

CREATE_FIELDS = {"contestants", "prompt", "system_prompt", "history", "params", "seeding", "tag"}


def _history(value) -> list:
    if value is None:
        return []
    if not isinstance(value, list) or not all(
            isinstance(t, dict) and set(t) == {"role", "content"} and t["role"] in ("user", "assistant")
            and isinstance(t["content"], str) for t in value):
        raise ValueError('history must be a list of {"role": "user"|"assistant", "content": "..."} turns.')
    return value


def _check_size(body: dict, history: list) -> None:
    """With a history, the whole conversation each contestant is sent counts, as the
    OpenAI-compatible API counts it (without one, the form's limit on each field is clearer)."""
    if history:  # ConversationTooLong: its 400 names the limit (arena.api.http.answer_refusals)
        conversations.check(prompt=body.get("prompt", ""), history=history, system_prompt=body.get("system_prompt", ""))


@methods("POST")
@token_required
def create_tournament(request):
    try:
        body = json_body(request, CREATE_FIELDS)
        contestants = body.get("contestants")
        if not isinstance(contestants, list) or not all(isinstance(c, str) for c in contestants):
            return error(400, "contestants must be a list of catalogue slugs.", {"contestants": "a list of slugs"})
        if len(contestants) not in (4, 8):
            return error(400, f"Pick 4 or 8 contestants, not {len(contestants)}.",
                         {"contestants": "4 or 8 slugs"})
        if len(set(contestants)) != len(contestants):
            return error(400, "Each contestant may appear only once.", {"contestants": "duplicates"})
        try:
            params = params_object(body)
        except NotAnObject as exc:
            return exc.response()
        for name in ("prompt", "system_prompt", "seeding", "tag"):
            if not isinstance(body.get(name, ""), str):
                raise ValueError(f"{name} must be a string.")
        history = _history(body.get("history"))
        _check_size(body, history)
    except ValueError as exc:
        return error(400, str(exc))
    data = {"prompt": body.get("prompt", ""), "system_prompt": body.get("system_prompt", ""),
            "seeding": body.get("seeding", Tournament.Seeding.RANDOM), "tag": body.get("tag", ""),
            **{f"contestant_{i + 1}": slug for i, slug in enumerate(contestants[:MAX_CONTESTANTS])}}
    form = TournamentForm(data, extra_params=params)
    if not form.is_valid():
        return form_error(form)
    cleaned = form.cleaned_data
    try:
        tournament = actions.start_tournament(
            request.user, contestants=cleaned["contestants"], prompt=cleaned["prompt"],
            system_prompt=cleaned["system_prompt"], history=history,
            params=cleaned["params"], seeding=cleaned["seeding"], tag=cleaned["tag"])
    except TournamentError as exc:
        return error(400, str(exc))
    return created(display.tournament_json(tournament, request.user), f"/api/v1/tournaments/{tournament.id}")


@methods("GET")
@token_required
def tournament(request, tournament_id):
    found = access_tournament(request.user, tournament_id, change=False)  # a teammate reads it
    return JsonResponse(display.tournament_json(found, request.user))


def _match_action(request, tournament_id, act, fields: set[str]):
    found = access_tournament(request.user, tournament_id)
    try:
        body = json_body(request, fields)  # as the create endpoints do: a misspelt "battle" must not skip its check
    except ValueError as exc:
        return error(400, str(exc))
    match_id = body.get("match")
    if isinstance(match_id, bool) or not isinstance(match_id, int):
        return error(400, "match must be a match id (an integer from the tournament's state).",
                     {"match": "an integer"})
    match = found.matches.filter(id=match_id).first()
    if match is None:
        return error(404, "No such match in this tournament.")
    try:
        act(found, match, body)
    except TournamentError as exc:
        return error(409, str(exc))
    found.refresh_from_db()
    return JsonResponse(display.tournament_json(found, request.user))


class NoteRefused(Exception):
    """A winner's note refused (its 400, from battles.api.api_note)."""

    def __init__(self, response: JsonResponse):
        super().__init__("note refused")
        self.response = response


@methods("POST")
@token_required
def winner(request, tournament_id):
    """{"match": id, "winner": "left"|"right", "reasons": [...], "comment": "..."}: the side of the
    match's battle that wins, with the verdict's optional note."""

    def pick(found, match, body):
        side = body.get("winner")
        if side not in ("left", "right"):
            raise ValueError
        note = api_note(body, found.team)
        if isinstance(note, JsonResponse):
            raise NoteRefused(note)
        actions.pick_winner(found, match, side, body.get("battle"), note)

    try:
        return _match_action(request, tournament_id, pick, {"match", "winner", "battle", "comment", "reasons"})
    except NoteRefused as exc:
        return exc.response
    except ValueError:
        return error(400, 'winner must be "left" or "right" (a knockout needs a winner).', {"winner": "left or right"})


@methods("POST")
@token_required
def rerun(request, tournament_id):
    """{"match": id}: the current match again, with new answers."""
    return _match_action(request, tournament_id, lambda found, match, _body: actions.rerun_match(found, match),
                         {"match"})
