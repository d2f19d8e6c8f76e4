"""The battle WebSocket, against real Redis streams written as two workers write them."""

import asyncio
import itertools
import statistics
import time

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from django.contrib.auth.models import AnonymousUser

from arena import streams
from arena.battles import presenting
from arena.battles.actions import start_battle
from arena.battles.models import Battle
from arena.routing import websocket_urlpatterns
from inference import protocol as p
from tests.arena.socket_client import WebsocketCommunicator
from tests.figures import shows_figure, shows_word

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


def make_battle(owner, catalogue, blind=False):
    sides = {s: {"model": catalogue[i], "params": {}} for s, i in (("left", 2), ("right", 3))}
    mode = Battle.Mode.TOURNAMENT if blind else Battle.Mode.COMPARISON
    return start_battle(owner, prompt="Hi", sides=sides, mode=mode, blind=blind)


def emit(gen, kind, **fields):
    streams.client().xadd(streams.keys().stream(str(gen.id)), p.event(kind, **fields))


async def connect(battle, user):
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/battles/{battle.id}/")
    comm.scope["user"] = user
    connected, code = await comm.connect()
    return comm, connected, code


async def receive_all(comm, timeout=1.0) -> str:
    """Every frame until none comes for `timeout` s (receive_nothing leaves the app running)."""
    frames = []
    while not await comm.receive_nothing(timeout=timeout):
        frames.append(await comm.receive_from())
    return "".join(frames)


def done(gen, text, rate):
    emit(gen, p.DONE, text=text, finish_reason="stop",
         metrics={"generated_tokens": 3, "decode_tokens_per_s": rate,
                  "first_token_time": gen.created_at.timestamp() + 1})


@pytest.fixture
def battle(owner, catalogue):
    return make_battle(owner, catalogue)


async def test_a_finished_side_says_at_once_whether_it_follows_its_regex(owner, catalogue):
    """Without a reload: each named side's end brings its validity line into its own place."""
    sides = {s: {"model": catalogue[i], "params": {"regex": "[A-Z][a-z]+"}} for s, i in (("left", 2), ("right", 3))}
    battle = await sync_to_async(start_battle)(owner, prompt="Hi", sides=sides)
    comm, connected, _ = await connect(battle, owner)
    assert connected
    await receive_all(comm, 0.5)
    done(battle.left, "Blue", 12.5)
    done(battle.right, "red!", 30.0)
    final = await receive_all(comm, 1.0)
    await comm.disconnect()
    left = final.split('<div id="left-validity">')[1].split("</div>")[0]
    right = final.split('<div id="right-validity">')[1].split("</div>")[0]
    assert 'data-valid="true"' in left and 'data-valid="false"' in right


async def test_both_sides_stream_into_their_own_panes_then_the_vote_opens(battle, owner):
    emit(battle.left, p.STARTED, prompt_tokens=3)
    emit(battle.left, p.TOKEN, text="Blue", n=1)
    comm, connected, _ = await connect(battle, owner)
    assert connected
    snapshot = await receive_all(comm, 0.5)
    assert 'id="left-output"' in snapshot and "Blue" in snapshot and 'id="right-status"' in snapshot
    emit(battle.right, p.STARTED, prompt_tokens=3)
    emit(battle.right, p.TOKEN, text=" <i>Red</i>", n=1)
    emit(battle.left, p.TOKEN, text=" sky", n=2)
    live = await receive_all(comm, 0.5)
    assert 'id="right-output" hx-swap-oob="beforeend"' in live and "&lt;i&gt;Red&lt;/i&gt;" in live
    assert "<i>" not in live and " sky" in live
    done(battle.left, "Blue sky", 12.5)
    done(battle.right, "Red", 30.0)
    final = await receive_all(comm, 1.0)
    assert "12.5" in final and "30.0" in final and "<svg" in final
    assert 'id="vote-buttons"' in final and "disabled" not in final.split('id="vote-buttons"')[1]
    assert '<div id="battle-stop" hidden></div>' in final  # nothing left to stop: the button goes
    await comm.disconnect()


async def test_a_blind_battle_sends_no_speeds_names_or_failure_details(owner, catalogue):
    battle = await database(make_battle, owner, catalogue, blind=True)
    emit(battle.left, p.LOADING, elapsed_s=3.0)
    emit(battle.left, p.TOKEN, text="Hello", n=1)
    done(battle.left, "Hello", 55.5)
    emit(battle.right, p.FAILED, reason="Worker smollm2-135m-awq-1234 exited with signal 9", code="worker_died")
    comm, connected, _ = await connect(battle, owner)
    assert connected
    frames = await receive_all(comm, 1.0)
    for secret in ("smollm2", "awq", "gemma"):
        assert not shows_word(frames, secret), secret
    assert not shows_figure(frames, "55.5") and "Tokens/s" not in frames
    assert "Run the match again" in frames and "Speeds are shown at the reveal" in frames
    await comm.disconnect()


async def test_another_user_and_anonymous_are_refused(battle, outsider):
    for user in (outsider, AnonymousUser()):
        _comm, connected, code = await connect(battle, user)
        assert not connected and code == 4404


async def test_stop_cancels_both_sides_and_bad_frames_get_an_error(battle, owner):
    comm, _connected, _ = await connect(battle, owner)
    await receive_all(comm, 0.3)
    await comm.send_to(text_data="{not json")
    assert "must be JSON" in await comm.receive_from()
    await comm.send_to(text_data='{"action": "delete-everything"}')
    assert "Unknown action" in await comm.receive_from()
    await comm.send_to(text_data='{"action": "stop"}')
    await receive_all(comm, 0.3)
    keys, client = streams.keys(), streams.client()
    assert client.get(keys.cancel(str(battle.left.id))) == b"user"
    assert client.get(keys.cancel(str(battle.right.id))) == b"user"
    await comm.disconnect()


async def database(fn, *args, **kwargs):
    return await sync_to_async(fn)(*args, **kwargs)


# --- paced delivery of a blind battle (arena/battles/pacing.py) ------------------------
async def frames_with_times(comm, timeout=1.0) -> list[tuple[float, str]]:
    frames = []
    while not await comm.receive_nothing(timeout=timeout):
        frames.append((time.monotonic(), await comm.receive_from()))
    return frames


def appended(frame: str, side: str) -> str:
    marker = f'<div id="{side}-output" hx-swap-oob="beforeend">'
    return "".join(part.split("</div>", 1)[0] for part in frame.split(marker)[1:])


async def test_a_blind_battles_sides_arrive_together_at_the_slower_pace(owner, catalogue, settings):
    settings.ARENA_BLIND_WORDS_PER_S = 50
    battle = await database(make_battle, owner, catalogue, blind=True)
    words = [f"w{i} " for i in range(12)]
    emit(battle.left, p.STARTED, prompt_tokens=3)
    emit(battle.right, p.STARTED, prompt_tokens=3)
    emit(battle.left, p.TOKEN, text="".join(words), n=12)  # the fast side: all at once
    done(battle.left, "".join(words), 500.0)
    comm, connected, _ = await connect(battle, owner)
    assert connected
    first = "".join(f for _t, f in await frames_with_times(comm, 0.4))
    assert "w1 " not in first  # nothing of the fast side races ahead of the silent one
    assert 'data-state="done"' not in first

    async def slow_side():  # one word every 0.1 s, while the frames are being timed
        for w in words:
            emit(battle.right, p.TOKEN, text=w, n=1)
            await asyncio.sleep(0.1)
        done(battle.right, "".join(words), 9.0)

    writing = asyncio.create_task(slow_side())
    frames = await frames_with_times(comm, 1.0)
    await writing
    text_frames = [(t, f) for t, f in frames if "beforeend" in f]
    for _t, frame in text_frames:  # every piece of one side comes with the same piece of the other
        assert len(appended(frame, "left").split()) == len(appended(frame, "right").split())
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(text_frames)]
    assert statistics.median(gaps) > 0.06  # the slow side's 0.1 s, not the fast one's burst
    tail = "".join(f for _t, f in frames)
    assert tail.count('data-state="done"') == 2 and 'id="vote-buttons"' in tail
    assert not shows_figure(tail, "500") and "Tokens/s" not in tail
    await comm.disconnect()


def answer_at_once(gen, text: str) -> None:
    """A side that starts, writes its whole answer in one token and ends (a fast model's burst)."""
    emit(gen, p.STARTED, prompt_tokens=3)
    emit(gen, p.TOKEN, text=text + " ", n=len(text.split()))
    done(gen, text, 50.0)


async def test_a_reconnecting_browser_gets_the_paced_text_so_far(owner, catalogue, settings):
    settings.ARENA_BLIND_WORDS_PER_S = 5
    battle = await database(make_battle, owner, catalogue, blind=True)
    for gen in (battle.left, battle.right):
        answer_at_once(gen, "one two three four five six seven eight")
    await asyncio.sleep(0.5)  # about three pieces out at 5 a second
    comm, _connected, _ = await connect(battle, owner)
    snapshot = await comm.receive_from()
    assert "one two" in snapshot and "seven" not in snapshot and 'data-state="running"' in snapshot
    await comm.disconnect()


async def test_a_paced_side_is_not_judged_before_its_text_is_out(owner, catalogue, settings):
    settings.ARENA_BLIND_WORDS_PER_S = 2
    battle = await database(make_battle, owner, catalogue, blind=True)
    for gen in (battle.left, battle.right):
        answer_at_once(gen, "a b c d")
    await database(finish_both, battle)
    fresh = await database(Battle.objects.select_related("left", "right").get, id=battle.id)
    shown = presenting.shown(fresh)
    assert fresh.finished and not shown.votable and not shown.finished
    assert [v.text for v in shown.views] == ["a", "a"]
    await asyncio.sleep(2.2)
    fresh = await database(Battle.objects.select_related("left", "right").get, id=battle.id)
    shown = presenting.shown(fresh)
    assert shown.votable and shown.finished


def finish_both(battle):
    for gen in (battle.left, battle.right):
        gen.finish(gen.Status.DONE, text="a b c d", finish_reason="stop", metrics={})
