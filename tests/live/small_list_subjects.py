"""What tests/live/test_small_list_browser.py opens, written straight to the running app's
database (`manage.py shell -c`, no model runs): a comparison both of whose answers were stopped
part-way (as Stop both leaves them), and an anonymous battle left unvoted (blind) beside one
judged, owned by the given user; and a comparison whose two answers are in their Redis streams
(as two workers wrote them: token times and all), for the socket to draw each side's speed chart."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils import timezone

from arena import streams
from arena.battles.actions import vote
from arena.battles.models import Battle
from arena.catalogue.models import ModelEntry
from arena.generations.models import Generation
from inference import protocol as p

LEFT, RIGHT = "smollm2-135m", "gemma-3-270m-llamacpp"


def _side(owner, model, prompt: str, text: str, status: str) -> Generation:
    now = timezone.now()
    return Generation.objects.create(
        owner=owner, model=model, prompt=prompt, params={"max_new_tokens": 64, "temperature": 0.7}, status=status,
        text=text, finish_reason="cancelled" if status == Generation.Status.CANCELLED else "stop", prompt_tokens=7,
        generated_tokens=len(text.split()), time_to_first_token_s=0.4, tokens_per_s=14.0, started_at=now,
        finished_at=now)


def seed(username: str) -> dict[str, str]:
    owner = get_user_model().objects.get(username=username)
    left, right = ModelEntry.objects.get(slug=LEFT), ModelEntry.objects.get(slug=RIGHT)
    stopped = Generation.Status.CANCELLED
    prompt = "Write a long story about a lighthouse keeper."
    comparison = Battle.objects.create(
        owner=owner, left=_side(owner, left, prompt, "The keeper climbed the stairs every night and", stopped),
        right=_side(owner, right, prompt, "Once upon a time, on a rock far out at sea, there", stopped))
    done = Generation.Status.DONE
    ask = "Name three colours of the sea at dusk."
    unvoted = Battle.objects.create(
        owner=owner, mode=Battle.Mode.ANONYMOUS, blind=True, pick_reason="random",
        left=_side(owner, left, ask, "Grey, violet and deep blue.", done),
        right=_side(owner, right, ask, "Orange, pink and black.", done))
    voted = Battle.objects.create(
        owner=owner, mode=Battle.Mode.ANONYMOUS, blind=True, pick_reason="random",
        left=_side(owner, right, "Name a bird.", "A heron.", done),
        right=_side(owner, left, "Name a bird.", "Gull.", done))
    assert vote(voted, "left")
    return {"comparison": str(comparison.id), "unvoted": str(unvoted.id), "voted": str(voted.id),
            "names": [left.name, right.name]}


def _stream(gen: Generation, began: float, tokens: int, seconds: float) -> None:
    """`gen`'s stream as its worker writes it: started, `tokens` words over `seconds`, done."""
    client, name = streams.client(), streams.keys().stream(str(gen.id))

    def add(at: float, kind: str, **fields) -> None:
        client.xadd(name, {**p.event(kind, **fields), "t": repr(at)})

    add(began, p.STARTED, prompt_tokens=7, queue_s=0.0)
    for n in range(1, tokens + 1):
        add(began + 0.3 + seconds * n / tokens, p.TOKEN, text=" word", n=n)
    add(began + 0.3 + seconds, p.DONE, text=" word" * tokens, finish_reason="stop",
        metrics={"generated_tokens": tokens, "decode_tokens_per_s": tokens / seconds})
    client.expire(name, p.STREAM_TTL_S)


def seed_streamed(username: str) -> str:
    """A named comparison whose answers are in their streams (its rows still say running)."""
    owner = get_user_model().objects.get(username=username)
    left, right = ModelEntry.objects.get(slug=LEFT), ModelEntry.objects.get(slug=RIGHT)
    running = Generation.Status.RUNNING
    battle = Battle.objects.create(owner=owner, left=_side(owner, left, "Count to thirty.", "", running),
                                   right=_side(owner, right, "Count to thirty.", "", running))
    began = battle.created_at.timestamp()
    _stream(battle.left, began, 30, 3.0)
    _stream(battle.right, began, 60, 1.5)
    return str(battle.id)
