"""The database under concurrent writes, as the web, Celery and orchestrator processes make
them: many writers at once lose nothing, and the conditional updates that guard a
generation's status let exactly one writer win. Runs on SQLite (WAL) and, in `make test`'s
second pass, on PostgreSQL. Threads stand in for processes: each has its own connection."""

import threading

import pytest
from django.db import close_old_connections, connection

from arena.battles.actions import start_battle, vote
from arena.battles.models import Battle
from arena.generations.models import Generation

pytestmark = pytest.mark.django_db(transaction=True)
WRITERS = 8


def in_threads(work, n=WRITERS):
    """Run work(i) in n threads released together; re-raise the first error."""
    barrier, errors = threading.Barrier(n), []

    def run(i):
        try:
            barrier.wait(timeout=30)
            work(i)
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()  # each thread's own connection

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    close_old_connections()
    assert not errors, errors


def test_concurrent_writers_lose_no_row(owner, smollm):
    def write(i):
        for j in range(25):
            Generation.objects.create(owner=owner, model=smollm, prompt=f"{i}-{j}", params={})

    in_threads(write)
    assert Generation.objects.count() == WRITERS * 25
    assert len(set(Generation.objects.values_list("prompt", flat=True))) == WRITERS * 25


def test_exactly_one_writer_claims_a_generation(owner, smollm):
    gens = [Generation.objects.create(owner=owner, model=smollm, prompt=str(i), params={}) for i in range(20)]
    wins = [[] for _ in gens]

    def claim(i):
        for k, gen in enumerate(gens):
            mine = Generation.objects.get(id=gen.id)
            if mine.claim(Generation.Status.QUEUED, Generation.Status.LOADING):
                wins[k].append(i)

    in_threads(claim)
    assert all(len(w) == 1 for w in wins), wins
    assert set(Generation.objects.values_list("status", flat=True)) == {Generation.Status.LOADING}


def test_only_the_first_outcome_of_a_generation_is_stored(owner, smollm):
    gen = Generation.objects.create(owner=owner, model=smollm, prompt="race", params={},
                                    status=Generation.Status.RUNNING)
    stored = []

    def finish(i):
        mine = Generation.objects.get(id=gen.id)
        status = Generation.Status.DONE if i % 2 else Generation.Status.FAILED
        if mine.finish(status, text=f"writer {i}", reason="" if i % 2 else "failed"):
            stored.append(i)

    in_threads(finish)
    gen.refresh_from_db()
    assert len(stored) == 1 and gen.text == f"writer {stored[0]}"


def test_votes_racing_the_answers_end_with_one_consistent_verdict(owner, catalogue):
    sides = {"left": {"model": catalogue[0], "params": {}}, "right": {"model": catalogue[3], "params": {}}}
    battle = start_battle(owner, prompt="Hi", sides=sides)
    for gen in (battle.left, battle.right):
        gen.finish(Generation.Status.DONE, text="ok")
    outcomes = ["left", "right", "tie", "both_bad"]

    def cast(i):
        assert vote(Battle.objects.select_related("left", "right").get(id=battle.id), outcomes[i % 4])

    in_threads(cast)
    battle.refresh_from_db()
    assert battle.outcome in outcomes and battle.voted_at is not None
