"""The soak (harness/soak.py, `make soak`), short: a mixed load (playground sockets, OpenAI streams, comparisons, a
tournament; several users) on the whole application with each of the four faults injected
once. Nothing is lost, no 5xx, and every finished answer is stored as it was streamed. Memory
growth is only reported: two minutes are too few to judge it."""

import json

import pytest

from harness import soak
from harness.private_redis import PrivateRedis

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(420)]


@pytest.fixture
def redis_server():
    server = PrivateRedis()
    server.start()
    yield server
    server.stop()


def test_a_short_soak_with_every_fault_loses_nothing(redis_server, tmp_path, capsys):
    with soak.soak_app(redis_server, tmp_path) as app:
        result = soak.run_soak(app, redis_server, minutes=1.5, users=4, clients=2, max_tokens=24,
                               drain_s=90, faults=len(soak.FAULT_KINDS))
    soak.report(result, memory=False)
    out = capsys.readouterr().out
    print(out)  # shown when an assertion fails
    figures = json.loads(out.strip().splitlines()[-1])
    details = result["details"]
    assert figures["lost"] == 0, details["lost"]
    assert figures["errors_5xx"] == 0, details["errors_5xx"]
    assert figures["stored_equals_streamed"], details["mismatches"]
    assert figures["failed_other"] == 0, details["failed_other"]
    assert set(figures["faults"]) == set(soak.FAULT_KINDS), figures["faults"]
    assert figures["cancelled_by_vanish"] == 1  # the vanished browser's answer was stopped
    assert figures["generations"] > 0 and figures["done"] > 0
    assert all(figures["by_kind"][kind] > 0 for kind in ("playground", "openai", "comparison", "tournament"))
    assert "rss_growth_pct" in figures and "redis_mb_growth" in figures  # reported, not judged


def side(state: str, text: str = "", append: str = "") -> str:
    out = f'<div id="left-status" class="status status-{state}" data-state="{state}">x</div>'
    if text:
        out += f'<div id="left-output" class="output">{text}</div>'
    if append:
        out += f'<div id="left-output" hx-swap-oob="beforeend">{append}</div>'
    return out


def test_a_battle_frame_reader_builds_the_text_as_htmx_would():
    """A plain replace restarts a side's text (a replay), appends extend it, the finished
    answer's Markdown rendering is left out, and a final status is what the side was told."""
    sides = {s: soak.Record("comparison", f"b:{s}", "u", 0.0) for s in ("left", "right")}
    soak.feed_battle_frame(side("running", "Hello", " wor"), sides)
    soak.feed_battle_frame(side("running", append="ld &amp; co"), sides)
    assert sides["left"].received == "Hello world & co" and sides["left"].told is None
    soak.feed_battle_frame(side("done") + '<div id="left-output" class="output markdown"><p>Hi</p></div>', sides)
    assert sides["left"].received == "Hello world & co" and sides["left"].told == "done"
    assert sides["right"].received == "" and sides["right"].told is None
    assert not sides["right"].waited
    soak.feed_battle_frame('<div id="right-status" class="status status-queued" data-state="queued">Queued '
                           "<span class='detail'>2nd in line of 3</span></div>", sides)
    assert sides["right"].waited and not sides["left"].waited


def test_the_reader_knows_every_ending_as_the_app_writes_it():
    """The status lines come from the app's own markup (a cut answer's class has a second word;
    reading only one, the soak's comparisons waited for an end they had already been told)."""
    from arena.generations import status

    sides = {s: soak.Record("comparison", f"b:{s}", "u", 0.0) for s in ("left", "right")}
    soak.feed_battle_frame(status.html("left-status", "done", finish_reason="length", tokens=8, limit=8)
                           + status.html("right-status", "done", finish_reason="stop_sequence"), sides)
    assert sides["left"].told == "done" and sides["right"].told == "done"


def test_a_told_state_the_store_contradicts_is_lost_and_a_fault_explains_a_failure():
    run = soak.Soak(app=None, redis_server=None, users=[], max_tokens=8)
    told_done = soak.Record("playground", "a", "u", 100.0, received="hi", told="done", ended=101.0,
                            stored={"status": "failed", "text": "hi", "failure_reason": "x"})
    never_ended = soak.Record("openai", "b", "u", 100.0, stored={"status": "running", "text": ""})
    faulted = soak.Record("playground", "c", "u", 100.0, told="failed", ended=105.0,
                          stored={"status": "failed", "text": "", "failure_reason": "signal 9"})
    differs = soak.Record("playground", "d", "u", 300.0, received="ab", told="done", ended=301.0,
                          stored={"status": "done", "text": "abc"})
    run.records = [told_done, never_ended, faulted, differs]
    run.faults = [(103.0, "worker_kill")]
    result = soak.judge(run, run_s=60, unexpiring=0)
    assert result["lost"] == 2 and result["failed_by_faults"] == 1 and result["failed_other"] == 0
    assert result["stored_equals_streamed"] is False and result["mismatches"] == 1
