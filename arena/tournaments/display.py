"""What the pages and the API show of a tournament: neutral labels until the reveal.

Before the reveal a match says only its slots' neutral labels and whether it is
waiting, being played or decided; never which slot won (with given seeding a slot
is a known model), never a name, speed or failure reason. After it, everything."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from arena.battles import presenting
from arena.generations.models import Generation
from arena.leaderboard import decision, picks, ratings, uncertainty
from arena.teams.membership import whose

from . import bracket
from .models import Match, Tournament

ONE_BRACKET = "One bracket: {verdicts} verdicts, each entry met at most {most} other{s}"
NOT_BETTER = ": {winner} won its matches, but the data cannot say it is better than the runner-up, {runner_up}."
FINAL_MORE = ("About {more} more verdict{s} between {winner} and {runner_up} would separate the final's two if "
              "{winner} goes on winning {rate}% of them ({given} so far).")
DECISION_SCOPE = ("From this tournament's matches alone (one verdict each): the contenders are the entries whose "
                  "95% interval overlaps the top one's or whose rank range includes 1st; speeds are medians over "
                  "its answers.")


def matches(tournament: Tournament) -> list[Match]:
    rows = list(tournament.matches.select_related(
        "left", "right", "winner", "battle__left__model", "battle__right__model").order_by("number"))
    for match in rows:
        match.tournament = tournament  # its labels need the size: no query per match
    return rows


def match_state(tournament: Tournament, match: Match, current: Match | None) -> str:
    if match.decided:
        return "decided"
    if current is not None and current.id == match.id:
        return "current"
    return "waiting"


def slot_view(match: Match, slot: str, reveal: bool) -> dict[str, Any]:
    view: dict[str, Any] = {"slot": slot, "label": match.slot_label(slot)}
    model = getattr(match, slot)
    if not reveal:
        return view
    view["model"] = model
    view["won"] = model is not None and match.winner_id == model.id
    side = match.battle_side_of(model)
    gen = getattr(match.battle, side) if side else None
    view["side"] = side
    view["gen"] = gen
    return view


def bracket_view(tournament: Tournament) -> list[dict]:
    """Rounds as columns, each a list of matches with their two slots."""
    reveal = tournament.revealed
    all_matches = matches(tournament)
    current = next((m for m in all_matches if not m.decided), None)
    columns = []
    for round_ in range(1, bracket.rounds(tournament.size) + 1):
        column = [{
            "match": match,
            "state": match_state(tournament, match, current),
            "slots": [slot_view(match, "left", reveal), slot_view(match, "right", reveal)],
            "flagged": reveal and match.battle is not None and match.battle.self_identified,
        } for match in all_matches if match.round == round_]
        columns.append({"round": round_, "name": bracket.round_name(tournament.size, round_), "matches": column})
    return columns


# --- the API's JSON ---------------------------------------------------------------------
def _side_json(shown: presenting.Shown, side: str, reveal: bool) -> dict:
    """A side's status and text: while blind, as its pacing shows them now (arena/battles/pacing.py)."""
    gen = getattr(shown.battle, side)
    body = {"label": "Model A" if side == "left" else "Model B", "status": gen.status, "text": gen.text,
            "finish_reason": gen.finish_reason}
    view = shown.side(side)
    if view is not None:  # how it ended only once its paced text is out (a cut is no clue to who answered)
        ended = view.end_event if view.ended and view.end_event else {}
        body.update(status=view.state, text=view.text, finish_reason=ended.get("finish_reason", "") or (
            "cancelled" if view.state == "cancelled" else ""))
    if reveal:
        body.update({
            "model": gen.model.slug, "name": gen.model.name, "failure_reason": gen.failure_reason,
            "time_to_first_token_s": gen.time_to_first_token_s, "tokens_per_s": gen.tokens_per_s,
            "generated_tokens": gen.generated_tokens, "load_wait_s": gen.load_wait_s,
            "queue_wait_s": gen.queue_wait_s,
        })
    return body


def tournament_json(tournament: Tournament, user) -> dict:
    reveal = tournament.revealed
    all_matches = matches(tournament)
    current = next((m for m in all_matches if not m.decided), None)
    body = {
        "id": str(tournament.id),
        **whose(tournament),
        "state": tournament.state,
        "size": tournament.size,
        "seeding": tournament.seeding,
        "tag": tournament.tag,
        "prompt": tournament.prompt,
        "system_prompt": tournament.system_prompt,
        "history": tournament.history,
        "params": tournament.params,
        "parent": str(tournament.parent_id) if tournament.parent_id else None,
        "created_at": tournament.created_at.isoformat(),
        "finished_at": tournament.finished_at.isoformat() if tournament.finished_at else None,
        "current_match": current.id if current and tournament.state != Tournament.State.FINISHED else None,
        "url": tournament.get_absolute_url(),
        "matches": [],
    }
    for match in all_matches:
        m: dict[str, Any] = {
            "id": match.id, "number": match.number, "round": match.round, "index": match.index,
            "state": match_state(tournament, match, current),
            "left_slot": match.slot_label("left"), "right_slot": match.slot_label("right"),
            "battle": None,
        }
        if (battle := match.battle) is not None:
            shown = presenting.shown(battle)
            m["battle"] = {"id": str(battle.id), "url": battle.get_absolute_url(),
                           "left": _side_json(shown, "left", reveal), "right": _side_json(shown, "right", reveal)}
            if reveal:
                m["battle"]["self_identified"] = battle.self_identified
                # The verdict's note: after the reveal only, as every blind verdict's.
                m["battle"]["reasons"] = battle.reasons if battle.outcome else None
                m["battle"]["comment"] = battle.comment if battle.outcome else None
        if reveal:
            m["left_model"] = match.left.slug if match.left else None
            m["right_model"] = match.right.slug if match.right else None
            m["winner"] = match.winner.slug if match.winner else None
        body["matches"].append(m)
    if reveal:
        body["winner"] = {"slug": tournament.winner.slug, "name": tournament.winner.name} if tournament.winner else None
        body["contestants"] = [{"seed": e.seed, "slug": e.model.slug, "name": e.model.name}
                               for e in tournament.entrants.select_related("model").order_by("seed")]
        summary = decision_summary(tournament, user)
        body["decision"] = summary.as_json() if summary else None
    return body


# --- what to pick (after the reveal only) -----------------------------------------------
def decision_summary(tournament: Tournament, user) -> decision.Summary | None:
    """What to pick from the bracket's matches (one verdict each: the winner over the other), with
    speeds over the matches' answers; None before the reveal (it would tell contestants apart).
    A knockout gives few verdicts: it says so first, and how many more verdicts the final's two
    would need, and names a single best only where the intervals do (arena.leaderboard.decision)."""
    if not tournament.revealed:
        return None
    played = [(m, m.winner, m.right if m.winner_id == m.left_id else m.left) for m in matches(tournament)
              if m.winner is not None and m.left is not None and m.right is not None]
    triples = [(won.slug, lost.slug, 1.0) for _m, won, lost in played if lost is not None]
    if not triples:
        return None
    answers = Generation.objects.filter(id__in=[i for m, *_x in played if m.battle for i in (m.battle.left_id,
                                                                                              m.battle.right_id)])
    summary = picks.summary(user, triples, answers, tournament_verdicts=len(triples))
    _final, winner, runner_up = max(played, key=lambda row: row[0].round)
    assert winner is not None and runner_up is not None  # a played match has both
    words = [_bracket_words(triples) + (NOT_BETTER.format(winner=winner.label, runner_up=runner_up.label)
                                        if runner_up.slug in summary.contenders else ".")]
    if summary.pair != (winner.slug, runner_up.slug):  # else the summary's own estimate is the final's
        words.append(_final_words(triples, winner, runner_up))
    return replace(summary, sentences=(*words, *summary.sentences))


def _bracket_words(triples: list[tuple[str, str, float]]) -> str:
    met: dict[str, set[str]] = {}
    for a, b, _score in triples:
        met.setdefault(a, set()).add(b)
        met.setdefault(b, set()).add(a)
    most = max(len(others) for others in met.values())
    return ONE_BRACKET.format(verdicts=len(triples), most=most, s="" if most == 1 else "s")


def _final_words(triples: list[tuple[str, str, float]], winner, runner_up) -> str:
    rate, given = ratings.win_matrix(triples)[(winner.slug, runner_up.slug)]
    sep = uncertainty.separation(rate, given)
    more = sep.more or 0
    return FINAL_MORE.format(more=more, s="" if more == 1 else "s", winner=winner.label, runner_up=runner_up.label,
                             rate=round(100 * rate), given=given)
