"""How an answer ended, said one way everywhere (arena/generations/status.py): done, cut at the token
limit, cut at a stop sequence, stopped by the user, failed with its reason; on the generation page, its
socket's frames, a battle's sides (blind ones too, once their paced text is out), History's list, a
shared page and the tournament's reveal."""

import re

import pytest
from django.template import Context, Template

from arena.battles import fragments as battle_fragments
from arena.battles.pacing import SideView
from arena.generations import status
from arena.generations.models import Generation
from arena.playground import fragments as playground_fragments
from inference import protocol as p
from tests.arena.factories import comparison

S = Generation.Status
CUT_8 = "Stopped at 8 tokens"


@pytest.mark.parametrize(("state", "finish_reason", "tokens", "limit", "blind", "said"), [
    ("done", "stop", 5, 8, False, "Done"),
    ("done", "length", 8, 8, False, CUT_8),
    ("done", "length", 8, None, False, CUT_8),  # a socket's frame before the parameters are known
    ("done", "length", 5, 8, False, "Stopped at 5 tokens: the model's context was full"),
    ("done", "length", 8, 8, True, "Stopped at the token limit"),  # blind: no count (tokenisers differ)
    ("done", "stop_sequence", 3, 8, False, "Stopped at a stop sequence"),
    ("cancelled", "cancelled", 2, 8, False, "Stopped by the user"),
    ("failed", "", 2, 8, False, "Failed"),
    ("running", "", None, 8, False, "Generating"),
])
def test_each_way_of_ending_reads_differently(state, finish_reason, tokens, limit, blind, said):
    assert status.text(state, finish_reason, tokens=tokens, limit=limit, blind=blind) == said


def test_the_line_keeps_data_state_and_says_which_ending_in_data_finish():
    cut = status.html("gen-status", "done", finish_reason="length", tokens=8, limit=8)
    assert cut == ('<div id="gen-status" class="status status-done status-cut" data-state="done" '
                   'data-finish="length">Stopped at 8 tokens</div>')
    done = status.html("gen-status", "done", finish_reason="stop")
    assert 'data-finish="done"' in done and "status-cut" not in done and ">Done<" in done
    failed = status.html("", "failed", "The worker <died>.")
    assert failed.startswith('<div class="status status-failed"') and "The worker &lt;died&gt;." in failed
    assert "data-finish" not in status.html("x", "running")


def done_event(finish_reason: str, tokens: int) -> dict:
    began = 1000.0
    return {"type": p.DONE, "t": began + 2, "text": "a b c", "finish_reason": finish_reason, "metrics": {
        "generated_tokens": tokens, "arrival_time": began, "first_scheduled_time": began + 0.5,
        "first_token_time": began + 0.75, "decode_tokens_per_s": 10.0}}


def status_of(html: str, element_id: str) -> str:
    found = re.search(rf'<div id="{element_id}" class="[^"]*" data-state="done" data-finish="[a-z_]+">([^<]*)<', html)
    assert found, html
    return found.group(1)


@pytest.mark.django_db
def test_the_playground_frame_of_a_cut_answer_says_the_limit_and_its_time_from_the_worker(owner, smollm):
    gen = Generation.objects.create(owner=owner, model=smollm, prompt="Count.", params={"max_new_tokens": 8})
    html = playground_fragments.final(done_event("length", 8), gen.created_at.timestamp(), gen)
    assert status_of(html, "gen-status") == CUT_8
    assert 'data-metric="ttft">0.25 s<' in html  # from when the worker began, not from the arrival
    stop = playground_fragments.final(done_event("stop_sequence", 3), gen.created_at.timestamp(), gen)
    assert status_of(stop, "gen-status") == "Stopped at a stop sequence"


@pytest.mark.django_db
def test_a_comparison_side_says_the_cut_live_and_stored(owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1], texts=None)
    view = battle_fragments.Side("left", battle.created_at.timestamp(), blind=False)
    assert status_of(battle_fragments.final(view, done_event("length", 8)), "left-status") == CUT_8
    gen = battle.left
    assert gen.finish(S.DONE, text="a b c", finish_reason="length", metrics=done_event("length", 8)["metrics"])
    stored = battle_fragments.stored(battle_fragments.Side("left", 0.0, blind=False), gen)
    assert status_of(stored, "left-status") == CUT_8


def test_a_blind_side_says_the_cut_only_once_its_paced_text_is_out():
    sides = [battle_fragments.Side(name, 0.0, blind=True) for name in ("left", "right")]
    running = [SideView("a b", "running"), SideView("c d", "running")]
    out = [SideView("a b c", "done", done_event("length", 8)), SideView("c d", "running")]
    frame = battle_fragments.paced_frame(sides, running, out)
    assert status_of(frame, "left-status") == "Stopped at the token limit"  # no count: nothing to tell them by
    assert "right-status" not in frame


@pytest.mark.django_db
def test_pages_say_it_as_the_sockets_do(owner, smollm):
    gen = Generation.objects.create(owner=owner, model=smollm, prompt="Count.", params={"max_new_tokens": 8})
    gen.finish(S.DONE, text="1 2 3 4 5 6 7 8", finish_reason="length", metrics={"generated_tokens": 8})
    rendered = Template("{% load generation_tags %}{% generation_status gen 'gen-status' %}|{{ gen|status_text }}|"
                        "{{ gen|outcome }}").render(Context({"gen": gen}))
    line, words, outcome = rendered.split("|")
    assert status_of(line, "gen-status") == words == CUT_8 and outcome == "length"
    assert status_of(playground_fragments.stored(gen), "gen-status") == CUT_8
