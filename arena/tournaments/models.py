"""A tournament: 4 or 8 contestants, a knockout bracket of blind battles on one prompt.

Blindness is a promise until the tournament ends: whatever a page, frame or API answer
says about the bracket uses neutral labels ("Contestant 3" for a first-round slot,
"Winner of match 2" later), never a name, a seed or anything that follows one
contestant from match to match. Each match is a blind `Battle` whose sides are placed
at random, so a side does not tell the bracket slot either. At the end every battle
of the tournament is revealed (its generations become visible) and the pages show
the whole bracket with names, the winner and each match's speeds.

Starting, judging, stopping and replaying a tournament are actions (arena/tournaments/actions.py).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from arena.battles.models import Battle
from arena.generations import tags
from arena.generations.models import Generation

from . import bracket


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
    team = models.ForeignKey("teams.Team", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
                             help_text="The team it was made in: its members see it (arena/access.py).")
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

    def contestants(self) -> list:
        """The entries in the order they were given (the form's, the API's)."""
        return [e.model for e in self.entrants.select_related("model").order_by("position")]

    # --- playing -----------------------------------------------------------------------
    def ordered_matches(self):
        return self.matches.order_by("number")

    def current_match(self) -> Match | None:
        """The first undecided match (its slots are filled: matches are played in order)."""
        return self.matches.filter(winner__isnull=True).order_by("number").first()

    def following_match(self, match: Match) -> Match | None:
        return self.matches.filter(number=match.number + 1).first()

    def battles(self):
        """Every battle run for this tournament's matches (re-runs included)."""
        return Battle.objects.filter(tournament_matches__tournament=self).distinct()

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
