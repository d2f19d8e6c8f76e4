"""Objects in the states tests need, built through the same model methods and services the
application uses (no rows written behind their back). One place instead of a copy per module."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta

from django.utils import timezone

from arena.battles.actions import start_battle, vote
from arena.battles.models import Battle, ReasonTag
from arena.battles.voting import DEFAULT_REASONS
from arena.generations.models import Generation
from arena.suites.actions import create_suite
from arena.tournaments.actions import pick_winner
from arena.tournaments.models import Tournament

PARAMS = {"temperature": 0.0, "max_new_tokens": 8}
BLIND_PARAMS = {"temperature": 0.7, "max_new_tokens": 8}  # a tournament refuses greedy sampling


def finish(gen: Generation, text: str = "Blue.", *, status: str = Generation.Status.DONE, rate: float = 12.5,
           tokens: int = 3) -> Generation:
    """End `gen` as its run would: the text, a finish reason and the metrics pages show."""
    began = gen.created_at.timestamp()  # its worker began at once: the first token 0.75 s later
    metrics = {"prompt_tokens": 7, "generated_tokens": tokens, "decode_tokens_per_s": rate,
               "arrival_time": began, "first_scheduled_time": began, "first_token_time": began + 0.75}
    assert gen.finish(status, text=text, finish_reason="stop", metrics=metrics), "it had already ended"
    return gen


def generation(owner, model, prompt: str = "Name a colour.", *, text: str | None = None, ago: float = 0,
               **fields) -> Generation:
    """A playground generation made `ago` seconds ago, finished with `text` when one is given."""
    gen = Generation.objects.create(owner=owner, model=model, prompt=prompt, params=fields.pop("params", PARAMS),
                                    created_at=timezone.now() - timedelta(seconds=ago), **fields)
    return finish(gen, text) if text is not None else gen


def comparison(owner, left, right, prompt: str = "Name a colour.", *,
               texts: Sequence[str] | None = ("Blue.", "Red."), **kwargs) -> Battle:
    """A named comparison started by the service, finished with `texts` (left, right); None: still running."""
    sides = {"left": {"model": left, "params": PARAMS}, "right": {"model": right, "params": PARAMS}}
    battle = start_battle(owner, prompt=prompt, sides=sides, **kwargs)
    return finish_battle(battle, *texts) if texts else battle


def finish_battle(battle: Battle, left: str = "Blue.", right: str = "Red.",
                  rates: tuple[float, float] = (12.5, 31.25)) -> Battle:
    """Both sides done (the right one faster by default), re-read as the vote would see it."""
    finish(battle.left, left, rate=rates[0])
    finish(battle.right, right, rate=rates[1])
    battle.refresh_from_db()
    battle.left.refresh_from_db()
    battle.right.refresh_from_db()
    return battle


def play_through(t, side: str = "left", text: str = ""):
    """Decide every match of tournament `t` (the given side of each battle wins, both sides answering
    `text` if given); `t` re-read, ended and revealed."""
    while (match := Tournament.objects.get(id=t.id).current_match()) is not None:
        finish_battle(match.battle, *([text, text] if text else []))
        t.refresh_from_db()
        pick_winner(t, match, side)
    t.refresh_from_db()
    return t


def verdict(owner, left, right, outcome: str, *, blind: bool = False, revealed: bool = False, **kwargs) -> Battle:
    """A finished battle with its vote (`blind`: a tournament match, counted once `revealed`)."""
    mode = Battle.Mode.TOURNAMENT if blind else Battle.Mode.COMPARISON
    battle = comparison(owner, left, right, prompt="Hi", texts=("ok", "ok"), mode=mode, blind=blind, **kwargs)
    assert vote(battle, outcome)
    if revealed:
        Battle.objects.filter(id=battle.id).update(revealed=True)
    return battle


def leaderboard_order(html: str) -> list[str]:
    """The model slugs of a rendered leaderboard table, best first."""
    return re.findall(r'<tr data-model="([^"]+)"', html)


def identifiers(models) -> list[str]:
    """Everything that would name a contestant on a page, in a file or in JSON."""
    found = []
    for m in models:
        found += [m.slug, m.name, m.source, m.gguf_file]
    return [s for s in found if s]


def suite(owner, *prompts: str | dict, name: str = "Capitals", tag: str = ""):
    """A prompt suite saved as the pages and the API save one (each prompt checked); a prompt
    is its text or a prompt object. Default: two prompts, the second with a regex."""
    from arena.suites.parsing import check_items

    items = prompts or ("Name a colour.", {"prompt": "Capital of France?", "regex": "^[A-Z][a-z]+$"})
    specs = check_items((f"prompts[{i}]", p if isinstance(p, dict) else {"prompt": p}) for i, p in enumerate(items))
    return create_suite(owner, name=name, tag=tag, prompts=specs)


def reason_tags() -> list[str]:
    """The default vote reasons as the migration stores them (a transactional test's flush empties
    the table for the tests after it), their slugs in order."""
    for position, (slug, label) in enumerate(DEFAULT_REASONS):
        ReasonTag.objects.get_or_create(slug=slug, defaults={"label": label, "position": position})
    return [slug for slug, _label in DEFAULT_REASONS]
