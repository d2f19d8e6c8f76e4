"""The answer cache: an identical deterministic request reuses the stored answer instead of
generating it again.

Identical: the same catalogue entry at the same version (`ModelEntry.version`, a fingerprint of
what it serves), the same messages (system prompt, earlier turns, prompt) and the same sampling
parameters. Deterministic: greedy (temperature 0: every engine takes the most likely token, so
the seed and top_p change nothing and are left out of the key), or sampled with a seed (the
transformers engine draws from a generator seeded per request, independent of its batch;
llama.cpp and OpenAI-compatible endpoints are sent the seed, which an endpoint honours on a best
effort basis). A request neither greedy nor seeded asks for a fresh draw and is never cached.

The cache is the generations themselves: a request that may be cached stores its key
(`Generation.cache_key`, indexed), and a DONE generation with that key, generated rather than
itself reused, is the entry. Failed and cancelled answers (stopped by the user, cut by a time
limit, a worker that went away) are never reused; an answer cut at its token limit is the whole
answer to that request (the limit is in the key) and is.

A cache serves one owner: another user's answers are theirs (their history, their deletion), and
an instant answer would tell a user that someone else had asked the same.

Who asks (`services.start(reuse=...)`): suite runs alone, within a run always, across the owner's
runs when the run says so. Blind modes never do: an anonymous battle's or a tournament match's
side that answered at once, with another request's speeds, would tell a blind judge which side
it is (and a blind battle must not reuse an answer its owner has seen named).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence

from inference.protocol import ParamError, SamplingParams

from .models import Generation, chat_messages

KEY_FORMAT = 1  # bumped if what goes into a key changes, so older keys stop matching

# How far a request may look for an identical answer (services.start's `reuse`).
NEVER = ""
WITHIN_RUN = "run"  # this run's own answers (a suite with the same prompt twice)
ANY_RUN = "any"  # the owner's answers in any run


def deterministic(params: SamplingParams) -> bool:
    return params.greedy or params.seed is not None


def key(model, system_prompt: str, history: Sequence[Mapping[str, str]], prompt: str, params: Mapping) -> str:
    """A request's cache key (services.GenerationRequest's fields: `model` its catalogue entry), a
    sha256 hex digest; "" when its answer is not deterministic."""
    try:
        sampled = SamplingParams.from_dict(dict(params))
    except ParamError:
        return ""  # refused before it gets here; never cached
    if not deterministic(sampled):
        return ""
    sampling = sampled.to_dict()
    if sampled.greedy:
        for ignored in ("seed", "top_p"):  # the argmax ignores both
            sampling.pop(ignored)
    payload = {
        "format": KEY_FORMAT,
        "model": model.pk,
        "version": model.version,
        "messages": chat_messages(model, system_prompt, history, prompt),
        "params": sampling,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def find(owner, cache_key: str, reuse: str, run_id: uuid.UUID | None) -> Generation | None:
    """The stored answer a request with `cache_key` may reuse (the most recent), or None."""
    if not cache_key or reuse == NEVER or (reuse == WITHIN_RUN and run_id is None):
        return None
    stored = Generation.objects.filter(owner=owner, cache_key=cache_key, status=Generation.Status.DONE,
                                       cached_from__isnull=True)
    if reuse == WITHIN_RUN:
        stored = stored.filter(run_id=run_id)
    return stored.order_by("-finished_at").first()


def twin_under_way(owner, cache_key: str, run_id: uuid.UUID) -> bool:
    """Whether an identical request of run `run_id` is still generating: a run that waits for it
    reuses its answer instead of generating the same one beside it."""
    return bool(cache_key) and Generation.objects.filter(
        owner=owner, run_id=run_id, cache_key=cache_key, status__in=Generation.live_statuses()).exists()
