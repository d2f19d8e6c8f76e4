"""Starting and cancelling work: the one way every page, API, battle, tournament, suite run and
the catalogue's probe creates generations, and the one place that asks a generation to stop.

`start` creates queued generations of one run (arena/generations/runs.py) from typed requests,
checks the per-user limits when asked, and submits them to the fair line (admission.py) in the
same transaction; a request that may reuse an identical one's stored answer (`reuse`: cache.py)
is created already done with it instead, and never joins the line. `cancel` writes each
generation's cancel key with the reason (the worker, the run following it and the line all read
it); `acancel` is its twin for async consumers.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.db import transaction

from arena import streams
from arena.teams import membership
from arena.teams.membership import CURRENT, _Current
from arena.teams.models import Team
from inference import protocol as p

from . import admission, cache, lifecycle, limits, runs
from .models import Generation

if TYPE_CHECKING:
    import redis

    from arena.catalogue.models import ModelEntry


@dataclass(frozen=True)
class GenerationRequest:
    """What one generation asks of its model."""

    model: ModelEntry
    prompt: str
    system_prompt: str = ""
    history: Sequence[Mapping[str, str]] = ()  # earlier turns [{role, content}] (a follow-up, the OpenAI API)
    params: Mapping = field(default_factory=dict)  # SamplingParams.to_dict()
    tag: str = ""

    @classmethod
    def from_form(cls, cleaned: Mapping) -> GenerationRequest:
        """From a generation form's cleaned data (the playground's, the JSON API's)."""
        return cls(model=cleaned["model"], prompt=cleaned["prompt"], system_prompt=cleaned.get("system_prompt") or "",
                   params=cleaned["params"], tag=cleaned.get("tag") or "")


@transaction.atomic
def start(owner, requests: Sequence[GenerationRequest], *, origin: str, kind: str,
          run_id: uuid.UUID | None = None, check_limits: bool = True, reuse: str = cache.NEVER,
          team: Team | _Current | None = CURRENT) -> list[Generation]:
    """Queued generations for `requests`, one run of `kind` (`run_id`: the battle or suite run),
    in line once the transaction commits. With `check_limits`, raises limits.LimitExceeded
    (nothing created) when `owner` may not start them now (each costs one).

    `reuse`: where an identical deterministic request's stored answer may be taken from
    (cache.WITHIN_RUN, cache.ANY_RUN); such a generation is created done (`lifecycle.from_cache`).
    Only suite runs ask: a blind battle or tournament never does (cache.py says why), so the
    default reuses nothing and stores no key. `team`: the run's (its owner's current team unless given)."""
    runs.get(kind)  # a kind nobody registered would never be started: refuse it here
    if check_limits:
        limits.check_start(owner, cost=len(requests))
    team = membership.resolve(owner, team)
    gens = [_create(owner, r, origin=origin, kind=kind, run_id=run_id, reuse=reuse, team=team) for r in requests]
    if any(not gen.finished for gen in gens):
        admission.submit()
    return gens


def _create(owner, request: GenerationRequest, *, origin: str, kind: str, run_id: uuid.UUID | None,
            reuse: str, team: Team | None) -> Generation:
    cache_key = cache.key(request.model, request.system_prompt, request.history, request.prompt,
                          request.params) if reuse != cache.NEVER else ""
    original = cache.find(owner, cache_key, reuse, run_id)
    gen = Generation.objects.create(owner=owner, team=team, model=request.model, origin=origin, run_kind=kind,
                                    run_id=run_id, prompt=request.prompt, system_prompt=request.system_prompt,
                                    history=list(request.history), params=dict(request.params), tag=request.tag,
                                    cache_key=cache_key, cached_from=original)
    if original is not None:
        lifecycle.from_cache(gen)
    return gen


def start_generation(owner, request: GenerationRequest, *, origin: str, kind: str) -> Generation:
    """One generation, a run of its own; raises limits.LimitExceeded when `owner` may not start it now."""
    [gen] = start(owner, [request], origin=origin, kind=kind)
    return gen


def cancel(ids, reason: str, client: redis.Redis | None = None) -> None:
    """Ask the generations `ids` to stop, saying why ("user", "abandoned", "timeout", "swept"...).
    Their worker stops the job, their run stores the outcome; one not started yet is ended by the
    line. The key outlives the stream no longer than the stream itself."""
    ids = [str(gen_id) for gen_id in ids]
    if not ids:
        return
    client, keys = client or streams.client(), streams.keys()
    pipe = client.pipeline(transaction=False)
    for gen_id in ids:
        pipe.set(keys.cancel(gen_id), reason, ex=p.STREAM_TTL_S)
    pipe.execute()


async def acancel(ids, reason: str) -> None:
    """`cancel` from async code (the sockets' Stop)."""
    await sync_to_async(cancel)(ids, reason)
