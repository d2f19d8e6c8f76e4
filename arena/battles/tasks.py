"""Running a battle: a `Run` with two sides (one lease on both models, both jobs handed
over in the same instant, both streams followed with one read), plus what only battles do."""

from __future__ import annotations

from celery import shared_task
from django.db.models import Q

from arena.generations import lifecycle, runs
from arena.generations.run import Follower, Run

from . import actions
from .models import Battle

# What a blind battle's sides say when a model could not be started: the orchestrator's
# own reason would name it (or its kind: "AWQ quantisation failed").
BLIND_UNAVAILABLE = "A contestant's model could not be started. Run the match again."


@shared_task(ignore_result=True, soft_time_limit=3600, time_limit=3700)
def run_battle(battle_id: str) -> None:
    battle = Battle.objects.select_related("left__model", "right__model").filter(id=battle_id).first()
    if battle is None:
        return
    if not all(lifecycle.begin(gen) for _side, gen in battle.sides):
        return  # another task has it (or the user stopped it first)
    BattleRun(battle).run()


class BattleRun(Run):
    KEPT_STOPPING = "The model worker kept stopping before it could start. Run it again."
    CRASHED = "An internal error stopped this battle."

    def __init__(self, battle: Battle):
        super().__init__([gen for _side, gen in battle.sides], f"battle:{battle.id}")
        self.battle = battle

    def unavailable_reason(self, reason: str) -> str:
        return reason if not self.battle.blind or reason == "cancelled" else BLIND_UNAVAILABLE

    def loading_fields(self, follower: Follower, elapsed: float, progress: str) -> dict:
        # A blind battle says nothing of which model loads or how (an AWQ quantisation
        # would name itself): only that both are being prepared.
        if self.battle.blind:
            return {"elapsed_s": round(elapsed, 1)}
        return super().loading_fields(follower, elapsed, progress)

    def after(self) -> None:
        for _side, gen in self.battle.sides:
            gen.refresh_from_db()
        actions.note_self_identification(self.battle)


def _start(battle_id: str) -> None:
    run_battle.delay(battle_id)


def register_run_kind() -> None:
    """The "battle" run kind (arena/generations/runs.py); BattlesConfig.ready() calls this."""
    runs.register(runs.RunKind(
        Battle.RUN_KIND, start=_start, grouped=True, on_ended=actions.note_side_ended,
        # A blind battle's answers would name the contestants (it shows them under neutral labels). An
        # answer in several battles (a suite's) is hidden while any of them may be such a battle.
        hidden=(Q(battles_as_left__blind=True, battles_as_left__revealed=False),
                Q(battles_as_right__blind=True, battles_as_right__revealed=False))))
