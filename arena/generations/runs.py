"""The run registry: the kinds of work that create generations, and what the generation core
needs to know of each without importing the apps built on it.

Every generation belongs to a run: `Generation.run_kind` names its kind and `Generation.run_id`
the run (a battle, a suite run; empty for a lone generation). The app that owns a kind registers
it (`register`, from its AppConfig.ready() or a module ready() imports):

- generations (arena/generations/tasks.py, from ready()): "playground" (a web page's generation), "api" (the
  JSON API), "openai" (the OpenAI-compatible API) and "probe" (the catalogue's test prompt), each
  one generation run by `run_generation`;
- battles (arena/battles/tasks.py, from ready()): "battle", a comparison's or a tournament match's two sides,
  run_id = the battle; its sides start together (one unit in the fair line), the sweeper's and
  the line's ending of a side checks the battle's answers, and a blind battle's sides stay hidden
  until it is revealed;
- suite runs (arena/suite_runs/runner.py, from ready()): "suite_answer" and "suite_judgement",
  run_id = the suite run, each generation started on its own by `run_generation`.

The line (admission.py), the sweeper (sweeper.py) and `GenerationQuerySet.visible()` ask this
registry; the start service and the run engine call the line directly (`admission.submit`,
`admission.admit_waiting`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.db.models import Q

if TYPE_CHECKING:
    from .models import Generation

# The single-generation kinds the generation core registers itself.
PLAYGROUND = "playground"
API = "api"
OPENAI = "openai"
PROBE = "probe"


@dataclass(frozen=True)
class RunKind:
    name: str
    # Sends the Celery task of an admitted unit: given the run id when `grouped`, else the generation id.
    start: Callable[[str], object]
    # The generations of one run are one unit in the fair line: they are admitted and started together.
    grouped: bool = False
    # Called when the sweeper or the line (not the run's own task) ended one of its generations.
    on_ended: Callable[[Generation], object] | None = None
    # Generations that pages and APIs must not show yet, each Q excluded on its own (across a
    # many-valued relation, separate exclude() calls err towards hiding).
    hidden: tuple[Q, ...] = ()
    # Its generations are a model judge's replies (a suite run's readings, a quick judge check):
    # never counted as that model's results (structured output, speeds: `judging_kinds`).
    judging: bool = False


_kinds: dict[str, RunKind] = {}


def register(kind: RunKind) -> None:
    """Add (or replace: ready() may run again in tests) a kind."""
    _kinds[kind.name] = kind


def get(name: str) -> RunKind:
    try:
        return _kinds[name]
    except KeyError:
        raise LookupError(f"No run kind {name!r} is registered (its app registers it in ready())") from None


def kinds() -> list[RunKind]:
    return list(_kinds.values())


def judging_kinds() -> list[str]:
    """The kinds whose generations are a judge's replies, not the model's answers."""
    return sorted(kind.name for kind in _kinds.values() if kind.judging)


def hidden() -> list[Q]:
    """What every kind hides: `GenerationQuerySet.visible()` excludes each."""
    return [q for kind in _kinds.values() for q in kind.hidden]


def ended_elsewhere(gen: Generation) -> None:
    """`gen` was ended by the sweeper or the line, not by its run: tell its kind."""
    kind = get(gen.run_kind)
    if kind.on_ended is not None:
        kind.on_ended(gen)

