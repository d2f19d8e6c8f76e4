"""The load measurement (harness/load.py, `make bench-load`) on the running application, small:
every token each viewer should get, replayed or live, exactly once and in order, and no error.
No timing is asserted."""

import json

import pytest

from harness import load

pytestmark = [pytest.mark.live, pytest.mark.slow]


def test_twenty_viewers_on_four_generations_get_every_token_once(live_app, capsys):
    result = load.run_load(live_app, viewers=20, generations=4, max_new_tokens=8, users=2, timeout_s=600)
    load.report(result)
    figures = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert figures["errors"] == 0, result["problems"]
    assert figures["delivered_over_generated"] == 1.0
    assert figures["viewers"] == 20 and figures["generations"] == 4
    assert figures["generated_tokens"] > 0 and figures["delivered_tokens"] == figures["expected_tokens"]
    assert figures["late_viewers"] > 0 and figures["live_tokens"] > 0


def test_a_lost_or_repeated_token_is_counted():
    """The viewer's check itself: a gap, a repeat and a wrong text are each found."""
    run = load.Run("g", None, "s", stored={"text": "abc", "metrics": {"generated_tokens": 3}})
    ok, lost, repeated = load.View(run, False), load.View(run, False), load.View(run, False)
    for view, indices in ((ok, [2, 3]), (lost, [3]), (repeated, [2, 2, 3])):
        view.feed('<div id="gen-output" class="output" data-n="1">a</div>', 0.0)
        for n in indices:
            view.feed(f'<div id="gen-output" hx-swap-oob="beforeend" data-n="{n}">{"abc"[n - 1]}</div>', 1.0)
        view.feed('<div id="gen-status" class="status status-done" data-state="done">Done</div>', 2.0)
    assert ok.check() == [] and ok.delivered() == 3
    assert lost.check() and lost.delivered() == 2
    assert repeated.check() and repeated.delivered() == 4
