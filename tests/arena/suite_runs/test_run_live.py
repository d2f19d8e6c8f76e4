"""A suite run's page while it runs and when it ends, through its one live mechanism (the progress
fragment's poll, arena.suite_runs.report.update): answers swap in as they land, judged pairs as they
are judged, and once the run ends the whole page, final (no Cancel). Also the judge explained: a
pair that is a tie because the judge's two orders disagreed says so with both readings, and the
page says how often the judge agreed with itself. Runs are driven by hand as in test_runner.py."""

from __future__ import annotations

import html as html_lib
import json
import re

import pytest

from arena.battles.models import Battle
from arena.generations.models import Generation
from arena.suite_runs import runner
from arena.suite_runs.actions import start_run
from tests.arena.factories import finish, suite
from tests.arena.suite_runs.running import end_all, live, run_to_end

pytestmark = pytest.mark.django_db


def poll_url(html: str) -> str:
    """The URL the page's progress section polls (what the browser's htmx would ask for next)."""
    found = re.search(r'hx-get="([^"]+)" hx-trigger="every 2s"', html)
    assert found, "the page does not poll"
    return html_lib.unescape(found.group(1))


def cells(html: str) -> dict[str, str]:
    """Answer cells in this HTML: {element id: data-status}."""
    return dict(re.findall(r'<div id="(suite-answer-[^"]+)" class="suite-answer" data-status="([^"]*)"', html))


def oob_cells(html: str) -> set[str]:
    return set(re.findall(r'<div id="(suite-answer-[^"]+)" class="suite-answer" data-status="[^"]*" '
                          r'hx-swap-oob="true"', html))


def test_the_poll_swaps_in_only_the_answers_that_changed_and_then_none(mine, owner, three):
    run = start_run(owner, suite=suite(owner), contestants=three, judge_model=three[0])
    runner.step(run)
    page = mine.get(run.get_absolute_url()).content.decode()
    shown = cells(page)
    assert len(shown) == 6 and "queued" in shown.values() and set(shown.values()) <= {"queued", ""}
    first = poll_url(page)
    assert mine.get(first).content.decode().count('hx-swap-oob="true"') == 0  # nothing changed yet

    gen = live(run)[0]
    finish(gen, "Mauve, said the first model.")
    reply = mine.get(first).content.decode()
    assert len(oob_cells(reply)) == 1 and cells(reply)[next(iter(oob_cells(reply)))] == "done"
    assert "Mauve, said the first model." in reply
    assert "suite-run-controls" not in reply  # the run goes on: its controls stay (Cancel)
    # The reply's own poll knows the page now shows that answer: nothing to swap again.
    assert oob_cells(mine.get(poll_url(reply)).content.decode()) == set()


def test_judged_pairs_are_appended_as_they_are_judged(mine, owner, three):
    run = start_run(owner, suite=suite(owner, "Capital of France?"), contestants=three[:2], judge_model=three[0])
    url = poll_url(mine.get(run.get_absolute_url()).content.decode())
    while not Battle.objects.filter(mode="suite").exists():
        runner.step(run)
        end_all(run, verdict="B")
    run.refresh_from_db()
    assert run.live  # the pair is recorded by the step that also ends the run only after this one
    reply = mine.get(url).content.decode()
    assert 'hx-swap-oob="beforeend:#suite-run-verdict-list"' in reply and reply.count('class="judged-pair"') == 1
    # The self-agreement figure comes with it ("B" in both orders: the answer shown second each time).
    assert 'data-agreed="0" data-pairs="1"' in reply
    assert 'class="judged-pair"' not in mine.get(poll_url(reply)).content.decode()


def test_when_the_run_ends_the_poll_swaps_in_the_whole_page_without_cancel(mine, owner, three):
    run = start_run(owner, suite=suite(owner), contestants=three, judge_model=three[0])
    runner.step(run)
    page = mine.get(run.get_absolute_url()).content.decode()
    assert 'id="suite-run-cancel"' in page and 'class="judged-pair"' not in page
    url = poll_url(page)
    run_to_end(run, verdict="B")
    reply = mine.get(url).content.decode()
    assert "hx-trigger" not in reply  # over: the polling stops
    for part in ("suite-run-controls", "suite-run-answers", "suite-run-verdicts", "suite-run-charts",
                 "suite-run-failures"):
        assert re.search(rf'id="{part}"[^>]*hx-swap-oob="true"', reply), part
    assert 'id="suite-run-cancel"' not in reply and "Export:" in reply
    assert set(cells(reply).values()) == {"done"} and len(cells(reply)) == 6
    # A judge that always says "B" reads positions: the final charts leave its verdicts out, saying so.
    assert reply.count('class="judged-pair"') == 6 and 'id="charts-left-out"' in reply


def test_a_tie_from_orders_that_disagreed_says_so_with_both_readings(mine, owner, three):
    # A judge that always answers "A" prefers whichever answer it is shown first: every pair is a tie.
    run = start_run(owner, suite=suite(owner), contestants=three, judge_model=three[0])
    run_to_end(run, verdict="A")
    assert set(Battle.objects.filter(mode="suite").values_list("outcome", flat=True)) == {"tie"}
    agreeing = Battle.objects.filter(mode="suite").order_by("created_at").first()
    agreeing.outcome = "left"
    agreeing.judgements = [{**j, "verdict": "left"} for j in agreeing.judgements]
    agreeing.save()

    page = mine.get(run.get_absolute_url()).content.decode()
    assert "Judge agreed with itself on 1 of 6 pairs (17 %)" in page
    assert page.count("Tie because the two orders disagreed") == 5
    disagreed = Battle.objects.filter(mode="suite", outcome="tie").select_related("left__model", "right__model")[0]
    left, right = (getattr(m, "label", "") or m.name for m in (disagreed.left.model, disagreed.right.model))
    item = re.search(rf'<li class="judged-pair" data-battle="{disagreed.id}".*?</li>\s*</ul>\s*</li>', page, re.S)
    text = html_lib.unescape(item.group(0))
    assert 'data-orders="disagreed"' in text
    assert f"With {left}’s answer shown first, the judge said: {left} is better." in text
    assert f"With {right}’s answer shown first, the judge said: {right} is better." in text
    winner = getattr(agreeing.left.model, "label", "") or agreeing.left.model.name
    assert f"{winner} is better" in html_lib.unescape(page)

    data = json.loads(b"".join(mine.get(f"/suite-runs/{run.id}/export.json").streaming_content))
    assert data["run"]["judge_agreement"] == {"agreed": 1, "total": 6, "percent": 17}
    by_id = {v["id"]: v for v in data["verdicts"]}
    assert by_id[str(disagreed.id)]["orders_agree"] is False
    assert by_id[str(disagreed.id)]["tie_reason"] == "the two orders disagreed"
    assert [j["verdict"] for j in by_id[str(disagreed.id)]["judgements"]] == ["left", "right"]
    assert by_id[str(agreeing.id)]["orders_agree"] is True and by_id[str(agreeing.id)]["tie_reason"] is None
    # The history export of the battles says the same, in JSON and in CSV.
    rows = json.loads(b"".join(mine.get("/history/export/battles.json").streaming_content))["rows"]
    row = next(r for r in rows if r["id"] == str(disagreed.id))
    assert row["tie_reason"] == "the two orders disagreed" and len(row["judgements"]) == 2
    csv_text = b"".join(mine.get("/history/export/battles.csv").streaming_content).decode()
    assert csv_text.count(",false,the two orders disagreed,") == 5


def test_the_suite_page_and_history_list_the_suites_runs(mine, owner, outsider, three):
    s = suite(owner, name="Geography drills", tag="geo")
    done = start_run(owner, suite=s, contestants=three[:2])
    run_to_end(done)
    running = start_run(owner, suite=s, contestants=three[1:3], judge_model=three[0])
    other = start_run(outsider, suite=suite(outsider, name="Not mine"), contestants=three[:2])

    page = mine.get(s.get_absolute_url()).content.decode()
    assert "Runs of this suite" in page
    for run in (done, running):
        assert f'<li data-run="{run.id}"><a href="{run.get_absolute_url()}">' in page
    assert re.search(rf'data-run="{done.id}".*?state-done', page, re.S)
    assert re.search(rf'data-run="{running.id}".*?state-running', page, re.S)

    listed = mine.get("/history/suite-runs/").content.decode()
    assert 'aria-current="page">Suite runs <span class="count">2</span>' in listed
    assert listed.count("Geography drills") == 2 and str(other.id) not in listed
    for run in (done, running):
        assert f'<tr data-id="{run.id}">' in listed and run.get_absolute_url() in listed
    assert 'Suite runs <span class="count">2</span>' in mine.get("/history/").content.decode()
    assert mine.get("/history/suite-runs/?tag=elsewhere").content.decode().count("<tr data-id=") == 0
    assert mine.get("/history/suite-runs/?q=geography").content.decode().count("<tr data-id=") == 2


def test_failed_cells_and_their_reasons_swap_in_live(mine, owner, three):
    run = start_run(owner, suite=suite(owner, "Hi?"), contestants=three[:2])
    runner.step(run)
    url = poll_url(mine.get(run.get_absolute_url()).content.decode())
    gen = live(run)[0]
    gen.finish(Generation.Status.FAILED, text="", reason="The prompt is longer than the context.")
    reply = mine.get(url).content.decode()
    assert set(cells(reply).values()) == {"failed"}
    assert re.search(r'id="suite-run-failures" hx-swap-oob="true"', reply)
    assert "The prompt is longer than the context." in reply


def test_what_a_page_shows_is_written_short_and_read_back():
    from arena.suite_runs.report import MAX_CELLS, Cell, _marks, seen

    class Answer:
        def __init__(self, status, attempts=1, passed=None, checks=()):
            self.generation, self.attempts = type("G", (), {"status": status})(), attempts
            self.passed = passed  # its checks' verdict: None until checked (or while a rubric grade is pending)
            self.checks = list(checks)

    cells = [Cell("a", Answer("done"))] * 300 + [Cell("b", Answer("running", 2)), Cell("c", None)] + [
        Cell("d", None)] * 700 + [Cell("e", Answer("done", passed=True)), Cell("f", Answer("done", passed=False)),
                                  Cell("g", Answer("done", checks=[{"pending": True}]))]
    shown = seen(cells, [1, 2])
    assert shown == "d1*300.r2.-*701.d1p.d1f.d1w~2"
    assert _marks(shown.partition("~")[0]) == [cell.mark for cell in cells]
    assert _marks(f"d1*{MAX_CELLS + 1}") == [] and _marks("d1*x") == [] and _marks("") == []
