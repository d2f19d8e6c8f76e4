"""The comparison and anonymous battle endpoints of the JSON API: start one, read it, vote, and
an anonymous battle's next turn (described in .openapi)."""

from typing import Any

from django.http import JsonResponse

from arena.access import may_change
from arena.accounts.bearer import token_required
from arena.api.http import created, error, form_error, json_body, methods
from arena.api.params import NotAnObject, params_object
from arena.categories.models import Assignment
from arena.generations.models import Generation
from arena.teams.membership import whose
from inference.protocol import ParamError, SamplingParams

from . import actions, anonymous, fair, presenting
from .access import access_battle
from .actions import start_comparison
from .forms import ArenaForm, ComparisonForm, FollowUpForm
from .models import Battle, ReasonTag
from .voting import Note, NoteError, clean_note

FIELDS = {"left_model", "right_model", "prompt", "left_system_prompt", "right_system_prompt",
          "params", "left_params", "right_params", "tag"}


def side_json(gen: Generation, names_visible: bool) -> dict[str, Any]:
    """One side; while the battle is blind, without the model and without speeds."""
    side: dict[str, Any] = {"status": gen.status, "text": gen.text, "finish_reason": gen.finish_reason,
            "failure_reason": gen.failure_reason if names_visible or not gen.failure_reason
            else "This answer failed.", "output_valid": gen.output_valid}
    if names_visible:
        side |= {"model": gen.model.slug, "system_prompt": gen.system_prompt, "params": gen.params,
                 "metrics": {"time_to_first_token_s": gen.time_to_first_token_s, "tokens_per_s": gen.tokens_per_s,
                             "generated_tokens": gen.generated_tokens, "load_wait_s": gen.load_wait_s,
                             "queue_wait_s": gen.queue_wait_s}}
    return side


def battle_json(battle: Battle) -> dict:
    visible = battle.names_visible
    return {
        "id": str(battle.id),
        **whose(battle),
        "mode": battle.mode,
        "blind": battle.blind,
        "tag": battle.tag,
        "prompt": battle.prompt,
        "history": battle.left.history if visible else [],
        "left": side_json(battle.left, visible),
        "right": side_json(battle.right, visible),
        "finished": battle.finished,
        "outcome": battle.outcome or None,
        # The verdict's note, where the names are (a blind item's after its reveal), else null.
        "reasons": battle.reasons if visible and battle.outcome else None,
        "comment": battle.comment if visible and battle.outcome else None,
        "self_identified": battle.self_identified if visible else None,
        "category": Assignment.category_name(Assignment.Subject.BATTLE, battle.id),
        "parent": str(battle.parent_id) if battle.parent_id else None,
        "created_at": battle.created_at.isoformat(),
        "url": battle.get_absolute_url(),
    }


@methods("POST")
@token_required
def create_comparison(request):
    try:
        body = json_body(request, FIELDS)
    except ValueError as exc:
        return error(400, str(exc))
    try:
        given = {key: params_object(body, key) for key in ("params", "left_params", "right_params")}
    except NotAnObject as exc:
        return exc.response()
    side_params = {}
    for side in ("left", "right"):
        params = {**given["params"], **given[f"{side}_params"]}
        try:
            SamplingParams.from_dict(params)  # strict types and ranges before the form's merge
        except ParamError as exc:
            return error(400, f"Invalid {side} parameters: {exc}", exc.errors, code="invalid_params")
        side_params[side] = params
    strings = {k: body.get(k, "") for k in FIELDS - {"params", "left_params", "right_params"}}
    if not all(isinstance(v, str) for v in strings.values()):
        return error(400, "Models, prompt, system prompts and tag must be strings.")
    form = ComparisonForm(strings, side_params=side_params)
    if not form.is_valid():
        return form_error(form)
    battle = start_comparison(request.user, form.cleaned_data, origin=Generation.Origin.API)
    return created(battle_json(battle), f"/api/v1/comparisons/{battle.id}", status=202)


@methods("GET")
@token_required
def comparison(request, battle_id):
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.COMPARISON, change=False)  # a teammate reads it
    return JsonResponse(battle_json(battle))


@methods("POST")
@token_required
def vote(request, battle_id):
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.COMPARISON)
    verdict = _verdict(request, battle.team)
    if isinstance(verdict, JsonResponse):
        return verdict
    if not actions.vote(battle, *verdict):
        return error(409, presenting.shown(battle).refusal or "This battle takes no vote.", code="not_votable")
    return JsonResponse(battle_json(battle))


VOTE_FIELDS = {"outcome", "comment", "reasons"}


def _verdict(request, team) -> tuple[str, Note] | JsonResponse:
    """The vote's `outcome` and its note (`comment`, `reasons`: of those offered to `team`'s
    battles) from the JSON body, or the 400 that says what is wrong with it."""
    try:
        body = json_body(request, VOTE_FIELDS)
    except ValueError as exc:
        return error(400, str(exc))
    outcome = body.get("outcome")
    if outcome not in Battle.Outcome.values:
        return error(400, f"outcome must be one of {', '.join(Battle.Outcome.values)}.",
                     {"outcome": "unknown outcome"})
    note = api_note(body, team)
    return note if isinstance(note, JsonResponse) else (outcome, note)


def api_note(body: dict, team) -> Note | JsonResponse:
    """A vote's note from a JSON body (`comment`, `reasons`: slugs of the reasons offered now on
    `team`'s battles), or its 400: `unknown_reason` for a reason not on the list, `invalid_request`
    for the rest."""
    try:
        return clean_note(body.get("comment"), body.get("reasons"),
                          [slug for slug, _label in ReasonTag.offered(team)])
    except NoteError as exc:
        return error(400, str(exc), {exc.field: str(exc)}, code=exc.code)


# --- anonymous battles (/api/v1/arena) ------------------------------------------------------
ARENA_FIELDS = {"prompt", "max_new_tokens", "tag"}


def anonymous_json(battle: Battle, *, can_change: bool = True) -> dict:
    """An anonymous battle as battle_json says it (blind: no models, no speeds), with why the
    pair was drawn once the names show, whether it takes a vote now, and the turn it continues.
    `can_change`: false for a teammate reading it, who may neither vote nor continue it."""
    visible = battle.names_visible
    return {**battle_json(battle),
            "pick_reason": battle.pick_reason if visible else None,
            "pick_reason_text": anonymous.REASON_WORDS.get(battle.pick_reason) if visible else None,
            "can_vote": can_change and anonymous.vote_problem(battle) == "" and presenting.shown(battle).votable,
            "can_continue": can_change and anonymous.can_continue(battle),
            "max_new_tokens": fair.common_limit(battle.left.params, battle.right.params)}


@methods("POST")
@token_required
def create_anonymous(request):
    try:
        body = json_body(request, ARENA_FIELDS)
    except ValueError as exc:
        return error(400, str(exc))
    if not isinstance(body.get("prompt", ""), str) or not isinstance(body.get("tag", ""), str):
        return error(400, "prompt and tag must be strings.")
    n = body.get("max_new_tokens")
    if isinstance(n, float) and n.is_integer():  # 64.0 is a whole number to JSON Schema too
        n = int(n)
    if n is not None and (isinstance(n, bool) or not isinstance(n, int)):  # null: the battle's one default
        return error(400, "max_new_tokens must be a whole number.", {"max_new_tokens": "must be a whole number"})
    form = ArenaForm({"prompt": body.get("prompt", ""), "tag": body.get("tag", ""),
                      "max_new_tokens": "" if n is None else str(n)})
    if not form.is_valid():
        return form_error(form)
    try:
        battle = actions.start_anonymous(request.user, prompt=form.cleaned_data["prompt"], params=form.params,
                                 tag=form.cleaned_data.get("tag") or "", origin=Generation.Origin.API)
    except anonymous.NoPair as exc:
        return error(409, exc.message)
    except ParamError as exc:
        return error(400, f"Invalid parameters: {exc}", exc.errors, code="invalid_params")
    return created(anonymous_json(battle), f"/api/v1/arena/{battle.id}", status=202)


@methods("GET")
@token_required
def anonymous_battle(request, battle_id):
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.ANONYMOUS, change=False)  # a teammate reads it
    return JsonResponse(anonymous_json(battle, can_change=may_change(request.user, battle)))


@methods("POST")
@token_required
def anonymous_vote(request, battle_id):
    """The verdict; the answer names both models (and their speeds) once it is recorded."""
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.ANONYMOUS)
    verdict = _verdict(request, battle.team)
    if isinstance(verdict, JsonResponse):
        return verdict
    if problem := anonymous.vote_problem(battle):
        return error(409, problem, code="not_votable")
    if not actions.vote(battle, *verdict):
        return error(409, presenting.shown(battle).refusal or "This battle takes no vote.", code="not_votable")
    return JsonResponse(anonymous_json(battle))


@methods("POST")
@token_required
def anonymous_continue(request, battle_id):
    """The next turn of an unjudged anonymous battle: the same pair, still blind."""
    battle = access_battle(request.user, battle_id, mode=Battle.Mode.ANONYMOUS)
    try:
        body = json_body(request, {"prompt"})
    except ValueError as exc:
        return error(400, str(exc))
    if not isinstance(body.get("prompt", ""), str):
        return error(400, "prompt must be a string.")
    form = FollowUpForm({"prompt": body.get("prompt", "")})
    if not form.is_valid():
        return form_error(form)
    if battle.outcome or battle.revealed:
        return error(409, "This battle is judged: start a new one to go on.")
    if not anonymous.can_continue(battle):
        return error(409, "Both answers must be complete before the conversation can go on.")
    nxt = actions.follow_up_anonymous(battle, form.cleaned_data["prompt"], origin=Generation.Origin.API)
    return created(anonymous_json(nxt), f"/api/v1/arena/{nxt.id}", status=202)
