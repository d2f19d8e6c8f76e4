"""A tournament: 4 or 8 contestants, a knockout bracket of blind battles on one prompt.

Blindness is a promise until the tournament ends: whatever a page, frame or API answer
says about the bracket uses neutral labels ("Contestant 3" for a first-round slot,
"Winner of match 2" later), never a name, a seed or anything that follows one
contestant from match to match. Each match is a blind `Battle` whose sides are placed
at random, so a side does not tell the bracket slot either. At the end every battle
of the tournament is revealed (its generations become visible) and the pages show
the whole bracket with names, the winner and each match's speeds.
"""

from __future__ import annotations

import random
import uuid

from django.conf import settings
from django.db import models, transaction
from django.dispatch import Signal
from django.urls import reverse
from django.utils import timezone

from arena.battles import fair
from arena.battles.models import Battle
from arena.battles.services import start_battle
from arena.generations import services, tags
from arena.generations.models import Generation

from . import bracket

# The warming of models ahead of a match (tasks.py, which imports this module) listens to these:
# `warm_wanted` (match): warm its models now; `battle_started` (match, battle): a match's battle began,
# so the following match's known contestants may be warmed once this one's have loaded.
warm_wanted = Signal()
battle_started = Signal()


class TournamentError(Exception):
    """A request the tournament cannot honour now; the message is fit for the user."""


# A blind match is sampled: a greedy or near-greedy answer could be replayed in the playground
# and matched word for word to a side, and so could a seed the judge chose. Each match draws
# its own seed, and these are the least randomness it accepts.
BLIND_MIN_TEMPERATURE = 0.3
BLIND_MIN_TOP_P = 0.5


def blind_params_problem(params: dict, who: str = "A blind match") -> str:
    """Why these sampling parameters cannot play a blind match ("" if they can)."""
    if params.get("seed") is not None:
        return (f"{who} cannot take a seed: each match draws its own, so its answers cannot be replayed "
                "in the playground to tell the contestants apart.")
    temperature, top_p = params.get("temperature"), params.get("top_p")
    if temperature is not None and temperature < BLIND_MIN_TEMPERATURE:
        return (f"{who} needs a temperature of at least {BLIND_MIN_TEMPERATURE} (got {temperature}): a greedy "
                "answer could be replayed word for word in the playground to tell the contestants apart.")
    if top_p is not None and top_p < BLIND_MIN_TOP_P:
        return (f"{who} needs a top_p of at least {BLIND_MIN_TOP_P} (got {top_p}): so narrow a choice is "
                "nearly greedy, and could be replayed to tell the contestants apart.")
    return ""


def check_blind_params(params: dict, contestants: list) -> None:
    """The tournament's parameters, and each contestant's own defaults under them."""
    problem = blind_params_problem(params, "A tournament")
    for model in contestants:
        if problem:
            break
        merged = {k: v for k, v in model.params_with_defaults(params, shared=True).to_dict().items() if k != "seed"}
        problem = blind_params_problem(merged, f"{model.name}, with its default parameters,")
    if problem:
        raise TournamentError(problem)


class Tournament(models.Model):
    class Seeding(models.TextChoices):
        RANDOM = "random", "Random"
        GIVEN = "given", "In the order given"

    class State(models.TextChoices):
        RUNNING = "running"
        STOPPED = "stopped"
        FINISHED = "finished"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tournaments")
    prompt = models.TextField()
    system_prompt = models.TextField(blank=True, help_text="Empty: each contestant's own system prompt.")
    history = models.JSONField(default=list, blank=True, help_text="Earlier turns of a chat: [{role, content}].")
    params = models.JSONField(default=dict, blank=True,
                              help_text="Shared sampling parameters, over each contestant's defaults.")
    size = models.PositiveSmallIntegerField(choices=[(n, str(n)) for n in bracket.SIZES])
    tag = tags.model_field()
    seeding = models.CharField(max_length=8, choices=Seeding.choices, default=Seeding.RANDOM)
    state = models.CharField(max_length=10, choices=State.choices, default=State.RUNNING, db_index=True)
    winner = models.ForeignKey("catalogue.ModelEntry", null=True, blank=True, on_delete=models.PROTECT,
                               related_name="tournaments_won")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="replays",
                               help_text="The tournament this one replays with another prompt.")
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"Tournament of {self.size}: {self.prompt[:40]}"

    def get_absolute_url(self) -> str:
        return reverse("tournament-detail", args=[self.id])

    @property
    def revealed(self) -> bool:
        return self.state == self.State.FINISHED

    # --- creating ----------------------------------------------------------------------
    @classmethod
    @transaction.atomic
    def start(cls, owner, *, contestants: list, prompt: str, system_prompt: str = "", history=None,
              params: dict | None = None, seeding: str = Seeding.RANDOM, parent: Tournament | None = None,
              rng: random.Random | None = None, tag: str = "") -> Tournament:
        """Seed the bracket and start match 1. `contestants`: ModelEntry objects, in the
        order given (the seed order when `seeding` is "given")."""
        ids = [c.id for c in contestants]
        if len(ids) not in bracket.SIZES:
            raise TournamentError(f"Pick 4 or 8 contestants, not {len(ids)}.")
        if len(set(ids)) != len(ids):
            raise TournamentError("Each contestant may appear only once.")
        if any(not c.enabled for c in contestants):
            raise TournamentError("Every contestant must be an enabled catalogue model.")
        if seeding not in cls.Seeding.values:
            raise TournamentError("Seeding is random or given.")
        params = fair.with_limit(params)  # one token limit for every match, said on the page (a form gives one)
        check_blind_params(params, contestants)
        tournament = cls.objects.create(owner=owner, prompt=prompt, system_prompt=system_prompt or "",
                                        history=list(history or []), params=params,
                                        size=len(ids), seeding=seeding, parent=parent, tag=tag)
        seeded = bracket.seeding(contestants, seeding, rng)
        Entrant.objects.bulk_create([Entrant(tournament=tournament, model=m, seed=i + 1, position=ids.index(m.id) + 1)
                                     for i, m in enumerate(seeded)])
        tournament._build_bracket(seeded)
        first = tournament.current_match()
        assert first is not None, "a bracket just built has its first match"
        # The first match's models start loading as soon as the tournament exists, ahead of its battle's own
        # lease (which waits for a slot in the fair line and a Celery worker): less of a cold start.
        transaction.on_commit(lambda: warm_wanted.send(sender=Match, match=first))
        first.start_battle()
        return tournament

    def _build_bracket(self, seeded: list) -> None:
        order = bracket.seed_order(self.size)
        rows = []
        for round_ in range(1, bracket.rounds(self.size) + 1):
            for index in range(bracket.matches_in_round(self.size, round_)):
                left = right = None
                if round_ == 1:
                    left, right = seeded[order[2 * index] - 1], seeded[order[2 * index + 1] - 1]
                rows.append(Match(tournament=self, round=round_, index=index, left=left, right=right,
                                  number=bracket.match_number(self.size, round_, index)))
        Match.objects.bulk_create(rows)

    def contestants(self) -> list:
        """The entries in the order they were given (the form's, the API's)."""
        return [e.model for e in self.entrants.select_related("model").order_by("position")]

    def replay(self, prompt: str, *, system_prompt: str | None = None, history=None,
               params: dict | None = None) -> Tournament:
        """The same contestants and seeding on another prompt (random seeding draws again)."""
        if self.seeding == self.Seeding.GIVEN:
            contestants = [e.model for e in self.entrants.select_related("model").order_by("seed")]
        else:
            contestants = self.contestants()
        return Tournament.start(
            self.owner, contestants=contestants, prompt=prompt,
            system_prompt=self.system_prompt if system_prompt is None else system_prompt,
            history=history or [], params=self.params if params is None else params,
            seeding=self.seeding, parent=self, tag=self.tag,
        )

    # --- playing -----------------------------------------------------------------------
    def ordered_matches(self):
        return self.matches.order_by("number")

    def current_match(self) -> Match | None:
        """The first undecided match (its slots are filled: matches are played in order)."""
        return self.matches.filter(winner__isnull=True).order_by("number").first()

    def following_match(self, match: Match) -> Match | None:
        return self.matches.filter(number=match.number + 1).first()

    @transaction.atomic
    def pick_winner(self, match: Match, side: str, battle_id=None) -> Match:
        """The user's verdict on the current match: the model on `side` of its battle wins
        and advances; the next match starts at once, or the tournament ends."""
        if side not in ("left", "right"):
            raise TournamentError("A knockout needs a winner: pick the left or the right answer.")
        if self.state != self.State.RUNNING:
            raise TournamentError("This tournament is not running." if self.state == self.State.FINISHED
                                  else "This tournament is stopped: resume it first.")
        match.refresh_from_db()
        if match.tournament_id != self.id or match.winner_id is not None:
            raise TournamentError("That match is already decided.")
        battle = match.battle
        if battle is None or (battle_id and str(battle.id) != str(battle_id)):
            raise TournamentError("This match was run again: judge the new answers.")
        if not battle.votable:
            raise TournamentError("Both answers must be complete before you pick a winner "
                                  "(if one failed, run the match again).")
        winner = battle.left.model if side == "left" else battle.right.model
        claimed = Match.objects.filter(id=match.id, winner__isnull=True, battle=battle).update(
            winner=winner, decided_at=timezone.now())
        if not claimed:  # a double submit, or another tab was quicker
            raise TournamentError("That match is already decided.")
        match.winner, match.decided_at = winner, timezone.now()
        battle.vote(side)
        nxt = match.next_match()
        if nxt is None:
            self.finish(winner)
        else:
            slot = bracket.feeds(match.round, match.index)[2]
            setattr(nxt, slot, winner)
            nxt.save(update_fields=[slot])
            current = self.current_match()
            if current is not None and current.ready and current.battle_id is None:
                current.start_battle()
        return match

    def finish(self, winner) -> None:
        claimed = Tournament.objects.filter(id=self.id, state=self.State.RUNNING).update(
            state=self.State.FINISHED, winner=winner, finished_at=timezone.now())
        if claimed:
            self.state, self.winner, self.finished_at = self.State.FINISHED, winner, timezone.now()
            self.battles().update(revealed=True)
            from arena.leaderboard.cache import bump_now_and_on_commit

            bump_now_and_on_commit()  # the revealed verdicts now count on the leaderboard

    def battles(self):
        """Every battle run for this tournament's matches (re-runs included)."""
        return Battle.objects.filter(tournament_matches__tournament=self).distinct()

    @transaction.atomic
    def stop(self) -> bool:
        """Pause: the current match's answers are cancelled; resume later."""
        claimed = Tournament.objects.filter(id=self.id, state=self.State.RUNNING).update(state=self.State.STOPPED)
        if claimed:
            self.state = self.State.STOPPED
            match = self.current_match()
            if match is not None and (battle := match.battle) is not None:
                transaction.on_commit(lambda: cancel_battle(battle))
        return bool(claimed)

    @transaction.atomic
    def resume(self) -> bool:
        """Go on where it stopped: a current match whose answers did not complete runs again."""
        claimed = Tournament.objects.filter(id=self.id, state=self.State.STOPPED).update(state=self.State.RUNNING)
        if claimed:
            self.state = self.State.RUNNING
            match = self.current_match()
            if match is not None and match.needs_rerun:
                match.start_battle()
        return bool(claimed)

    @transaction.atomic
    def rerun_match(self, match: Match) -> Match:
        """The current match again, with new answers (the user can't decide, or a side failed)."""
        if self.state != self.State.RUNNING:
            raise TournamentError("Resume the tournament first.")
        match.refresh_from_db()
        current = self.current_match()
        if current is None or current.id != match.id:
            raise TournamentError("Only the current match can be run again.")
        old = match.battle
        match.start_battle()
        if old is not None and not old.finished:
            transaction.on_commit(lambda: cancel_battle(old))
        return match


class Entrant(models.Model):
    """A contestant of a tournament: `seed` its bracket seed, `position` the order given."""

    tournament = models.ForeignKey(Tournament, on_delete=models.CASCADE, related_name="entrants")
    model = models.ForeignKey("catalogue.ModelEntry", on_delete=models.PROTECT, related_name="+")
    seed = models.PositiveSmallIntegerField()
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["seed"]
        constraints = [
            models.UniqueConstraint(fields=["tournament", "seed"], name="tournament_entrant_seed"),
            models.UniqueConstraint(fields=["tournament", "model"], name="tournament_entrant_model"),
        ]

    def __str__(self) -> str:
        return f"seed {self.seed} of tournament {self.tournament_id}"


class Match(models.Model):
    """One match of the bracket. `left`/`right` are its bracket slots (top/bottom), known
    once the matches feeding them are decided; its battle places them at random."""

    tournament = models.ForeignKey(Tournament, on_delete=models.CASCADE, related_name="matches")
    round = models.PositiveSmallIntegerField()
    index = models.PositiveSmallIntegerField(help_text="Position in its round, top to bottom.")
    number = models.PositiveSmallIntegerField(help_text="Playing order, from 1.")
    left = models.ForeignKey("catalogue.ModelEntry", null=True, blank=True, on_delete=models.PROTECT,
                             related_name="+")
    right = models.ForeignKey("catalogue.ModelEntry", null=True, blank=True, on_delete=models.PROTECT,
                              related_name="+")
    battle = models.ForeignKey(Battle, null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                               help_text="The battle being judged (the latest run).")
    runs = models.ManyToManyField(Battle, blank=True, related_name="tournament_matches",
                                  help_text="Every battle run for this match.")
    winner = models.ForeignKey("catalogue.ModelEntry", null=True, blank=True, on_delete=models.PROTECT,
                               related_name="+")
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["number"]
        constraints = [
            models.UniqueConstraint(fields=["tournament", "round", "index"], name="tournament_match_slot"),
            models.UniqueConstraint(fields=["tournament", "number"], name="tournament_match_number"),
        ]

    def __str__(self) -> str:
        return f"Match {self.number}"

    @property
    def ready(self) -> bool:
        return self.left_id is not None and self.right_id is not None

    @property
    def decided(self) -> bool:
        return self.winner_id is not None

    @property
    def needs_rerun(self) -> bool:
        """No battle yet, or one whose answers failed or were cancelled."""
        if self.battle is None:
            return True
        return any(gen.status in (Generation.Status.FAILED, Generation.Status.CANCELLED)
                   for _side, gen in self.battle.sides)

    def next_match(self) -> Match | None:
        round_, index, _slot = bracket.feeds(self.round, self.index)
        return Match.objects.filter(tournament_id=self.tournament_id, round=round_, index=index).first()

    def slot_label(self, slot: str) -> str:
        """A neutral name for a slot, the same before and after it is filled."""
        if self.round == 1:
            return f"Contestant {2 * self.index + (1 if slot == 'left' else 2)}"
        return f"Winner of match {bracket.fed_by(self.tournament.size, self.round, self.index, slot)}"

    def battle_side_of(self, slot_model) -> str | None:
        """Which side of the battle a bracket slot's model played (for the reveal)."""
        if self.battle is None or slot_model is None:
            return None
        return "left" if self.battle.left.model_id == slot_model.id else "right"

    def start_battle(self) -> Battle:
        """A new blind battle for this match, sides placed at random; then ask the
        orchestrator to warm the next match's models while this one is judged."""
        left, right = self.left, self.right
        if left is None or right is None:
            raise TournamentError("This match waits for the matches before it.")
        t = self.tournament
        first, second = (left, right) if random.SystemRandom().random() < 0.5 else (right, left)
        sides = {side: {"model": model, "system_prompt": t.system_prompt, "history": t.history,
                        "params": {**model.params_with_defaults(fair.with_limit(t.params), shared=True).to_dict(),
                                   "seed": _draw_seed()}}
                 for side, model in (("left", first), ("right", second))}
        battle = start_battle(t.owner, prompt=t.prompt, sides=sides, mode=Battle.Mode.TOURNAMENT, blind=True,
                              parent=self.battle, tag=t.tag)
        self.battle = battle
        self.save(update_fields=["battle"])
        self.runs.add(battle)
        battle_started.send(sender=Match, match=self, battle=battle)
        return battle


def cancel_battle(battle: Battle) -> None:
    """Ask both of a battle's live generations to stop (as the Stop button does)."""
    for _side, gen in battle.sides:
        gen.refresh_from_db(fields=["status"])
    services.cancel([gen.id for _side, gen in battle.sides if not gen.finished], "user")


def _draw_seed() -> int:
    """A blind side's own seed, from the OS: nothing the judge chose or could guess."""
    return random.SystemRandom().randrange(2**32)
