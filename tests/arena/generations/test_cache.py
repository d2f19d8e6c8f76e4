"""The answer cache (arena/generations/cache.py): which requests have a key, which stored answers a
request reuses through the start service, what a reused answer holds, and that battles never reuse
one. Suite runs, the one path that asks, are tested in tests/arena/suite_runs/test_run_cache.py."""

import uuid

import pytest

from arena.battles.models import Battle
from arena.generations import cache, services
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest
from arena.leaderboard import measures
from tests.arena.factories import comparison, finish

pytestmark = pytest.mark.django_db

GREEDY = {"temperature": 0.0, "max_new_tokens": 8}


def key(model, prompt="Name a colour.", params=GREEDY, system_prompt="", history=()):
    return cache.key(model, system_prompt, history, prompt, params)


def start(owner, model, *, prompt="Name a colour.", params=GREEDY, run_id=None, reuse=cache.WITHIN_RUN):
    [gen] = services.start(owner, [GenerationRequest(model=model, prompt=prompt, params=params)], origin="suite",
                           kind="api", run_id=run_id, check_limits=False, reuse=reuse)
    return gen


# --- the key ----------------------------------------------------------------------------------
def test_only_greedy_or_seeded_requests_have_a_key(smollm):
    assert key(smollm, params={"temperature": 0.7, "max_new_tokens": 8}) == ""  # a fresh draw each time
    assert key(smollm, params={"max_new_tokens": 8}) == ""  # the default temperature samples
    assert len(key(smollm)) == 64
    seeded = key(smollm, params={"temperature": 0.7, "seed": 7, "max_new_tokens": 8})
    assert seeded and seeded != key(smollm, params={"temperature": 0.7, "seed": 8, "max_new_tokens": 8})


def test_the_key_covers_messages_and_parameters_but_not_what_greedy_ignores(smollm, catalogue):
    base = key(smollm)
    assert base == key(smollm, params={**GREEDY, "seed": 3, "top_p": 0.5})  # the argmax ignores both
    assert base != key(smollm, prompt="Name a colour!")
    assert base != key(smollm, system_prompt="Be brief.")
    assert base != key(smollm, history=[{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hi"}])
    assert base != key(smollm, params={**GREEDY, "max_new_tokens": 9})
    assert base != key(catalogue[1])


def test_an_edit_to_what_the_entry_serves_is_a_new_version(smollm):
    before = (smollm.version, key(smollm))
    smollm.memory_estimate_mb += 100  # where and how much: not what it answers
    assert (smollm.version, key(smollm)) == before
    smollm.precision = "fp32" if smollm.precision != "fp32" else "bf16"
    assert smollm.version != before[0] and key(smollm) != before[1]


# --- reuse through the start service --------------------------------------------------------------
def test_a_done_answer_is_reused_created_done_with_its_figures(owner, smollm):
    run_id = uuid.uuid4()
    original = finish(start(owner, smollm, run_id=run_id), "Blue.", rate=40.0, tokens=3)
    copy = start(owner, smollm, run_id=run_id)
    copy.refresh_from_db()
    original.refresh_from_db()
    assert copy.status == Generation.Status.DONE and copy.cached and copy.cached_from == original
    assert (copy.text, copy.finish_reason, copy.prompt_tokens, copy.generated_tokens) == (
        original.text, original.finish_reason, original.prompt_tokens, original.generated_tokens)
    assert (copy.tokens_per_s, copy.time_to_first_token_s) == (40.0, original.time_to_first_token_s)
    assert copy.admitted_at is None and copy.queue_wait_s is None  # no place in the line, so no worker
    assert copy.cache_key == original.cache_key and copy.finished_at is not None


def test_within_a_run_only_that_runs_answers_are_reused(owner, smollm):
    finish(start(owner, smollm, run_id=uuid.uuid4()))
    assert not start(owner, smollm, run_id=uuid.uuid4()).cached  # another run's, not asked for
    assert start(owner, smollm, run_id=uuid.uuid4(), reuse=cache.ANY_RUN).cached


def test_nothing_is_reused_unless_asked_and_no_key_is_stored(owner, smollm):
    original = finish(start(owner, smollm, reuse=cache.ANY_RUN))
    plain = start(owner, smollm, reuse=cache.NEVER)
    assert original.cache_key and plain.cache_key == "" and not plain.cached
    assert plain.status == Generation.Status.QUEUED


def test_a_request_that_is_not_deterministic_is_never_reused(owner, smollm):
    sampled = {"temperature": 0.7, "max_new_tokens": 8}
    finish(start(owner, smollm, params=sampled, reuse=cache.ANY_RUN))
    again = start(owner, smollm, params=sampled, reuse=cache.ANY_RUN)
    assert not again.cached and again.cache_key == "" and again.status == Generation.Status.QUEUED


@pytest.mark.parametrize("status", [Generation.Status.FAILED, Generation.Status.CANCELLED])
def test_a_failed_or_cancelled_answer_is_never_reused(owner, smollm, status):
    finish(start(owner, smollm, reuse=cache.ANY_RUN), "Bl", status=status)
    assert not start(owner, smollm, reuse=cache.ANY_RUN).cached


def test_another_users_answer_is_never_reused(owner, outsider, smollm):
    finish(start(outsider, smollm, reuse=cache.ANY_RUN))
    assert not start(owner, smollm, reuse=cache.ANY_RUN).cached


def test_a_copy_points_at_the_original_not_at_another_copy(owner, smollm):
    original = finish(start(owner, smollm, reuse=cache.ANY_RUN))
    start(owner, smollm, reuse=cache.ANY_RUN)
    assert start(owner, smollm, reuse=cache.ANY_RUN).cached_from == original


def test_an_anonymous_battle_never_reuses_a_stored_answer(owner, catalogue):
    left, right = catalogue[:2]
    for model in (left, right):
        finish(start(owner, model, prompt="Hi", reuse=cache.ANY_RUN))
    battle = comparison(owner, left, right, prompt="Hi", texts=None, mode=Battle.Mode.ANONYMOUS, blind=True)
    for side, model in ((battle.left, left), (battle.right, right)):
        # The very request that is stored (so the test could fail), started blind: it generates.
        assert key(model, "Hi", side.params) == Generation.objects.get(cached_from=None, model=model,
                                                                       cache_key__gt="").cache_key
        assert side.status == Generation.Status.QUEUED and not side.cached and side.cache_key == ""


# --- speeds ----------------------------------------------------------------------------------------
def test_a_cached_answer_never_counts_its_speed_twice(owner, smollm):
    original = finish(start(owner, smollm, reuse=cache.ANY_RUN), rate=10.0)
    finish(start(owner, smollm, prompt="Other", reuse=cache.ANY_RUN), rate=30.0)
    for _ in range(2):
        assert start(owner, smollm, reuse=cache.ANY_RUN).cached_from == original
    assert measures.median_speeds()[smollm.slug] == 20.0  # [10, 30], not [10, 10, 10, 30]
    copies = Generation.objects.filter(cached_from=original)
    assert measures.median_speeds(copies)[smollm.slug] == 10.0  # a run of copies alone: the original's, once
