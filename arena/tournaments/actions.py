"""Every write that starts, changes or ends a tournament: start (and replay), pick a match's
winner, stop, resume, run a match again. Pages and the API call these alike; the models hold
the bracket's data and its queries."""

from __future__ import annotations

import random

from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from arena.battles import actions as battle_actions
from arena.battles import fair, presenting
from arena.battles.models import Battle
from arena.battles.voting import Note
from arena.leaderboard.cache import bump_now_and_on_commit
from arena.teams import membership

from . import bracket
from .models import Entrant, Match, Tournament, TournamentError, check_blind_params

# The warming of models ahead of a match (tasks.py, which imports this module) listens to these:
# `warm_wanted` (match): warm its models now; `battle_started` (match, battle): a match's battle began,
# so the following match's known contestants may be warmed once this one's have loaded.
warm_wanted = Signal()
battle_started = Signal()


@transaction.atomic
def start_tournament(owner, *, contestants: list, prompt: str, system_prompt: str = "", history=None,
                     params: dict | None = None, seeding: str = Tournament.Seeding.RANDOM,
                     parent: Tournament | None = None, rng: random.Random | None = None,
                     tag: str = "") -> Tournament:
    """Seed the bracket and start match 1. `contestants`: ModelEntry objects, in the
    order given (the seed order when `seeding` is "given")."""
    _check_contestants(contestants, seeding)
    params = fair.with_limit(params)  # one token limit for every match, said on the page (a form gives one)
    check_blind_params(params, contestants)
    tournament = Tournament.objects.create(owner=owner, team=membership.current_team(owner), prompt=prompt,
                                           system_prompt=system_prompt or "",
                                           history=list(history or []), params=params, size=len(contestants),
                                           seeding=seeding, parent=parent, tag=tag)
    ids = [c.id for c in contestants]
    seeded = bracket.seeding(contestants, seeding, rng)
    Entrant.objects.bulk_create([Entrant(tournament=tournament, model=m, seed=i + 1, position=ids.index(m.id) + 1)
                                 for i, m in enumerate(seeded)])
    _build_bracket(tournament, seeded)
    first = tournament.current_match()
    assert first is not None, "a bracket just built has its first match"
    # The first match's models start loading as soon as the tournament exists, ahead of its battle's own
    # lease (which waits for a slot in the fair line and a Celery worker): less of a cold start.
    transaction.on_commit(lambda: warm_wanted.send(sender=Match, match=first))
    start_match(first)
    return tournament


def _check_contestants(contestants: list, seeding: str) -> None:
    ids = [c.id for c in contestants]
    if len(ids) not in bracket.SIZES:
        raise TournamentError(f"Pick 4 or 8 contestants, not {len(ids)}.")
    if len(set(ids)) != len(ids):
        raise TournamentError("Each contestant may appear only once.")
    if any(not c.enabled for c in contestants):
        raise TournamentError("Every contestant must be an enabled catalogue model.")
    if seeding not in Tournament.Seeding.values:
        raise TournamentError("Seeding is random or given.")


def _build_bracket(tournament: Tournament, seeded: list) -> None:
    size = tournament.size
    order = bracket.seed_order(size)
    rows = []
    for round_ in range(1, bracket.rounds(size) + 1):
        for index in range(bracket.matches_in_round(size, round_)):
            left = right = None
            if round_ == 1:
                left, right = seeded[order[2 * index] - 1], seeded[order[2 * index + 1] - 1]
            rows.append(Match(tournament=tournament, round=round_, index=index, left=left, right=right,
                              number=bracket.match_number(size, round_, index)))
    Match.objects.bulk_create(rows)


def replay_tournament(tournament: Tournament, prompt: str, *, system_prompt: str | None = None, history=None,
           params: dict | None = None) -> Tournament:
    """The same contestants and seeding on another prompt (random seeding draws again)."""
    if tournament.seeding == Tournament.Seeding.GIVEN:
        contestants = [e.model for e in tournament.entrants.select_related("model").order_by("seed")]
    else:
        contestants = tournament.contestants()
    return start_tournament(
        tournament.owner, contestants=contestants, prompt=prompt,
        system_prompt=tournament.system_prompt if system_prompt is None else system_prompt,
        history=history or [], params=tournament.params if params is None else params,
        seeding=tournament.seeding, parent=tournament, tag=tournament.tag,
    )


@transaction.atomic
def pick_winner(tournament: Tournament, match: Match, side: str, battle_id=None, note: Note | None = None) -> Match:
    """The user's verdict on the current match: the model on `side` of its battle wins
    and advances; the next match starts at once, or the tournament ends. `note`: the verdict's
    reasons and comment (shown once the tournament is revealed)."""
    if side not in ("left", "right"):
        raise TournamentError("A knockout needs a winner: pick the left or the right answer.")
    if tournament.state != Tournament.State.RUNNING:
        raise TournamentError("This tournament is not running." if tournament.state == Tournament.State.FINISHED
                              else "This tournament is stopped: resume it first.")
    match.refresh_from_db()
    if match.tournament_id != tournament.id or match.winner_id is not None:
        raise TournamentError("That match is already decided.")
    battle = match.battle
    if battle is None or (battle_id and str(battle.id) != str(battle_id)):
        raise TournamentError("This match was run again: judge the new answers.")
    if not presenting.shown(battle).votable:
        raise TournamentError("Both answers must be complete before you pick a winner "
                              "(if one failed, run the match again).")
    winner = battle.left.model if side == "left" else battle.right.model
    claimed = Match.objects.filter(id=match.id, winner__isnull=True, battle=battle).update(
        winner=winner, decided_at=timezone.now())
    if not claimed:  # a double submit, or another tab was quicker
        raise TournamentError("That match is already decided.")
    match.winner, match.decided_at = winner, timezone.now()
    battle_actions.vote(battle, side, note)
    nxt = match.next_match()
    if nxt is None:
        finish_tournament(tournament, winner)
    else:
        slot = bracket.feeds(match.round, match.index)[2]
        setattr(nxt, slot, winner)
        nxt.save(update_fields=[slot])
        current = tournament.current_match()
        if current is not None and current.ready and current.battle_id is None:
            start_match(current)
    return match


def finish_tournament(tournament: Tournament, winner) -> None:
    """The tournament ends, won by `winner` (once: a claim on its running state); every battle it ran is revealed."""
    claimed = Tournament.objects.filter(id=tournament.id, state=Tournament.State.RUNNING).update(
        state=Tournament.State.FINISHED, winner=winner, finished_at=timezone.now())
    if claimed:
        tournament.state, tournament.winner, tournament.finished_at = Tournament.State.FINISHED, winner, timezone.now()
        tournament.battles().update(revealed=True)
        bump_now_and_on_commit()  # the revealed verdicts now count on the leaderboard


@transaction.atomic
def stop_tournament(tournament: Tournament) -> bool:
    """Pause: the current match's answers are cancelled; resume later."""
    claimed = Tournament.objects.filter(id=tournament.id, state=Tournament.State.RUNNING).update(
        state=Tournament.State.STOPPED)
    if claimed:
        tournament.state = Tournament.State.STOPPED
        match = tournament.current_match()
        if match is not None and (battle := match.battle) is not None:
            transaction.on_commit(lambda: battle_actions.stop_battle(battle))
    return bool(claimed)


@transaction.atomic
def resume_tournament(tournament: Tournament) -> bool:
    """Go on where it stopped: a current match whose answers did not complete runs again."""
    claimed = Tournament.objects.filter(id=tournament.id, state=Tournament.State.STOPPED).update(
        state=Tournament.State.RUNNING)
    if claimed:
        tournament.state = Tournament.State.RUNNING
        match = tournament.current_match()
        if match is not None and match.needs_rerun:
            start_match(match)
    return bool(claimed)


@transaction.atomic
def rerun_match(tournament: Tournament, match: Match) -> Match:
    """The current match again, with new answers (the user can't decide, or a side failed)."""
    if tournament.state != Tournament.State.RUNNING:
        raise TournamentError("Resume the tournament first.")
    match.refresh_from_db()
    current = tournament.current_match()
    if current is None or current.id != match.id:
        raise TournamentError("Only the current match can be run again.")
    old = match.battle
    start_match(match)
    if old is not None and not old.finished:
        transaction.on_commit(lambda: battle_actions.stop_battle(old))
    return match


def start_match(match: Match) -> Battle:
    """A new blind battle for this match, sides placed at random; then ask the
    orchestrator to warm the next match's models while this one is judged."""
    left, right = match.left, match.right
    if left is None or right is None:
        raise TournamentError("This match waits for the matches before it.")
    t = match.tournament
    first, second = (left, right) if random.SystemRandom().random() < 0.5 else (right, left)
    sides = {side: {"model": model, "system_prompt": t.system_prompt, "history": t.history,
                    "params": {**model.params_with_defaults(fair.with_limit(t.params), shared=True).to_dict(),
                               "seed": _draw_seed()}}
             for side, model in (("left", first), ("right", second))}
    battle = battle_actions.start_battle(t.owner, prompt=t.prompt, sides=sides, mode=Battle.Mode.TOURNAMENT,
                                         blind=True, parent=match.battle, tag=t.tag, team=t.team)
    match.battle = battle
    match.save(update_fields=["battle"])
    match.runs.add(battle)
    battle_started.send(sender=Match, match=match, battle=battle)
    return battle


def _draw_seed() -> int:
    """A blind side's own seed, from the OS: nothing the judge chose or could guess."""
    return random.SystemRandom().randrange(2**32)
