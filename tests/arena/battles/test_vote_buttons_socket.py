"""What the battle socket sends once both answers have ended: the vote opens after Stop too (with
a word that the verdict is on the answers as far as they got), stays shut with the reason when an
answer failed, and each button carries its words for both layouts (side by side: left/right;
stacked on a phone: which one on top, "Model A" while blind). Real Redis streams, written as two workers write them."""

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter

from arena import streams
from arena.battles import voting
from arena.battles.actions import start_battle
from arena.battles.models import Battle
from arena.routing import websocket_urlpatterns
from inference import protocol as p
from tests.arena.socket_client import WebsocketCommunicator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def make_battle(owner, catalogue, mode=Battle.Mode.COMPARISON):
    sides = {s: {"model": catalogue[i], "params": {}} for s, i in (("left", 2), ("right", 3))}
    return start_battle(owner, prompt="Hi", sides=sides, mode=mode, blind=mode != Battle.Mode.COMPARISON)


def emit(gen, kind, **fields):
    streams.client().xadd(streams.keys().stream(str(gen.id)), p.event(kind, **fields))


def answer(gen, words: list[str], end=p.CANCELLED):
    emit(gen, p.STARTED, prompt_tokens=3)
    for n, word in enumerate(words, 1):
        emit(gen, p.TOKEN, text=word, n=n)
    text = "".join(words)
    if end == p.FAILED:
        emit(gen, p.FAILED, reason="The worker died.", code=p.WORKER_DIED)
    else:
        emit(gen, end, text=text, finish_reason="stop", metrics={"generated_tokens": len(words)})


async def frames(battle, user) -> str:
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/battles/{battle.id}/")
    comm.scope["user"] = user
    assert (await comm.connect())[0]
    out = []
    while not await comm.receive_nothing(timeout=1.0):
        out.append(await comm.receive_from())
    await comm.disconnect()
    return "".join(out)


def buttons(html: str) -> str:
    return html.split('id="vote-buttons"')[-1].split("</fieldset>")[0]


async def test_after_stop_both_the_vote_opens_with_the_word_why(owner, catalogue):
    battle = await sync_to_async(make_battle)(owner, catalogue)
    answer(battle.left, ["Blue", " is"])
    answer(battle.right, ["Red"])
    got = buttons(await frames(battle, owner))
    assert "disabled" not in got and voting.VOTE_AFTER_STOP in got
    assert "← Left is better" in got and "↑ Top answer is better" in got and "↓ Bottom answer is better" in got


async def test_a_failed_side_keeps_the_vote_shut_and_says_why(owner, catalogue):
    battle = await sync_to_async(make_battle)(owner, catalogue)
    answer(battle.left, ["Blue"], end=p.DONE)
    answer(battle.right, ["Re"], end=p.FAILED)
    got = buttons(await frames(battle, owner))
    assert got.count("disabled") == 4 and voting.VOTE_FAILED in got


async def test_a_stopped_anonymous_battle_opens_its_vote_with_blind_stacked_words(owner, catalogue, settings):
    settings.ARENA_BLIND_WORDS_PER_S = 1000
    battle = await sync_to_async(make_battle)(owner, catalogue, Battle.Mode.ANONYMOUS)
    answer(battle.left, ["Blue", " is"])
    answer(battle.right, ["Red"])
    got = buttons(await frames(battle, owner))
    assert "disabled" not in got and "↑ Model A is better" in got and "↓ Model B is better" in got

