"""The suite run pages: new run form, the run page and its progress fragment, cancel, my runs,
and the exports (CSV, JSON, LLM Comparator). Runs are driven as in test_runner.py: their
generations are ended by hand (tests/arena/factories.finish)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from arena.generations.models import Generation
from arena.suite_runs import judge
from arena.suite_runs.actions import start_run
from arena.suite_runs.models import SuiteRun
from tests.arena.factories import suite
from tests.arena.suite_runs.running import end_all, live, run_to_end

pytestmark = pytest.mark.django_db


def body(response) -> str:
    return (response.getvalue() if response.streaming else response.content).decode()


def judged_run(owner, three, **kwargs) -> SuiteRun:
    run = start_run(owner, suite=suite(owner, "Capital of France?", "=1+1", tag="maths"), contestants=three,
                    judge_model=three[0])
    run_to_end(run, **kwargs)
    run.refresh_from_db()
    return run


def form_data(s, models, **extra) -> dict:
    data = {"suite": s.id, "format": "round_robin", "judge": "", "judge_template": judge.DEFAULT_TEMPLATE}
    data.update({f"contestant_{i}": m.slug for i, m in enumerate(models, start=1)})
    return {**data, **extra}


def test_the_suite_page_offers_a_run_and_the_form_is_prefilled(mine, owner, three):
    s = suite(owner)
    assert f"/suite-runs/new/?suite={s.id}" in mine.get(s.get_absolute_url()).content.decode()
    html = mine.get(f"/suite-runs/new/?suite={s.id}").content.decode()
    assert f'<option value="{s.id}" selected>' in html and "People judge" in html
    assert "{answer_a}" in html and "Please act as an impartial judge" in html


def test_a_new_run_starts_and_opens_its_page(mine, owner, three):
    s = suite(owner)
    response = mine.post("/suite-runs/new/", form_data(s, three, judge=three[0].slug, temperature="0",
                                                      max_new_tokens="32"))
    run = SuiteRun.objects.get(owner=owner)
    assert response.status_code == 302 and response["Location"] == run.get_absolute_url()
    assert run.contestants == list(three) and run.judge == three[0] and run.params == {"temperature": 0.0,
                                                                                         "max_new_tokens": 32}
    assert run.judge_template == judge.DEFAULT_TEMPLATE


@pytest.mark.parametrize("change, message", [
    ({"contestant_1": "", "contestant_2": "", "contestant_3": ""}, "Pick 1 to 16 contestants, not 0."),
    ({"format": "swiss"}, "A Swiss run needs 8 or more contestants, not 3"),
    ({"format": "adaptive", "judge": ""}, "The adaptive format chooses its pairs from a model judge&#x27;s verdicts"),
    ({"format": "adaptive", "budget": "1"}, "Ensure this value is greater than or equal to 2."),
    ({"contestant_2": "smollm2-135m"}, "Each contestant may appear only once."),
    ({"judge_template": "Which? {answer_a}"}, "The judge template must show {question}, {answer_b}."),
    ({"top_p": "7"}, "Ensure this value is less than or equal to 1.0."),
])
def test_the_form_says_what_is_wrong(mine, owner, three, change, message):
    s = suite(owner)
    data = form_data(s, three, judge=three[0].slug)
    response = mine.post("/suite-runs/new/", {**data, **change})
    assert response.status_code == 400 and message in response.content.decode()
    assert not SuiteRun.objects.exists()


def test_another_users_suite_cannot_be_run(mine, outsider, three):
    response = mine.post("/suite-runs/new/", form_data(suite(outsider), three))
    assert response.status_code == 400 and not SuiteRun.objects.exists()


def test_the_run_page_shows_progress_results_answers_verdicts_and_charts(mine, owner, three):
    run = judged_run(owner, three, verdict="A", fail=lambda gen: gen.model == three[2] and "=1+1" in gen.prompt)
    html = mine.get(run.get_absolute_url()).content.decode()
    assert 'id="suite-run-progress"' in html and f'data-done="{run.done}"' in html
    assert f'data-total="{run.total}"' in html and "hx-trigger" not in html  # over: no polling
    assert "Capital of France?" in html and f"Paris ({three[1].slug})" in html
    for model in three:
        assert f'<tr data-model="{model.slug}">' in html
    assert "Failed answers" in html and "Prompt 2 (attempt 3)" in html
    assert "Judged pairs" in html and "left_first" in html and "right_first" in html
    # Its judge said "A" every time: marked unreliable, its verdicts are charted only on request.
    assert 'id="charts-left-out"' in html and 'id="frontier-speed"' not in html
    assert 'id="frontier-speed"' in mine.get(run.get_absolute_url() + "?unreliable=include").content.decode()
    assert mine.get("/suite-runs/").content.decode().count(run.get_absolute_url()) == 1


def test_the_progress_fragment_polls_while_the_run_is_live(mine, owner, three):
    run = start_run(owner, suite=suite(owner), contestants=three)
    from arena.suite_runs import runner

    runner.step(run)
    end_all(run)
    runner.step(run)
    run.refresh_from_db()
    html = mine.get(f"/suite-runs/{run.id}/progress").content.decode()
    assert 'hx-trigger="every 2s"' in html and f'hx-get="/suite-runs/{run.id}/progress?seen=' in html
    assert f'data-done="{run.done}"' in html and 0 < run.done < run.total
    assert "min left" in html or "under a minute left" in html
    assert "<html" not in html  # a fragment


def test_cancel_stops_the_run_and_the_polling(mine, owner, three):
    run = start_run(owner, suite=suite(owner), contestants=three)
    from arena.suite_runs import runner

    runner.step(run)
    assert live(run)
    response = mine.post(f"/suite-runs/{run.id}/cancel")
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.state == SuiteRun.State.CANCELLED
    assert "hx-trigger" not in mine.get(f"/suite-runs/{run.id}/progress").content.decode()
    assert "suite-run-cancel" not in mine.get(run.get_absolute_url()).content.decode()


def test_the_csv_export_has_one_row_per_answer_with_formulas_escaped(mine, owner, three):
    run = judged_run(owner, three, answer="=cmd")
    response = mine.get(f"/suite-runs/{run.id}/export.csv")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"].startswith('attachment; filename="llm-arena-suite-run-')
    rows = list(csv.DictReader(io.StringIO(body(response))))
    assert len(rows) == 2 * 3
    assert [(r["prompt_position"], r["contestant"]) for r in rows[:3]] == [("1", m.slug) for m in three]
    assert rows[0]["text"].startswith("'=cmd") and rows[3]["prompt"] == "'=1+1"


def test_the_json_export_holds_the_run_answers_and_verdicts_with_both_judgements(mine, owner, three):
    run = judged_run(owner, three)
    data = json.loads(body(mine.get(f"/suite-runs/{run.id}/export.json")))
    assert data["dataset"] == "suite_run" and data["run"]["contestants"] == [m.slug for m in three]
    assert data["run"]["judge"] == three[0].slug and len(data["answers"]) == 6
    assert len(data["verdicts"]) == 6
    verdict = data["verdicts"][0]
    assert verdict["mode"] == "suite" and verdict["judge"] == three[0].slug and verdict["prompt_position"] in (1, 2)
    assert [j["order"] for j in verdict["judgements"]] == ["left_first", "right_first"]


def test_the_llm_comparator_export_is_the_object_the_tool_loads(mine, owner, three):
    run = judged_run(owner, three, verdict="A")
    from arena.battles.models import Battle

    Battle.objects.filter(mode="suite").update(outcome="right")  # B wins every pair, to read the sign
    data = json.loads(body(mine.get(f"/suite-runs/{run.id}/export.jsonl")))
    assert set(data) == {"metadata", "models", "examples"}
    assert data["models"] == [{"name": three[0].name}, {"name": three[1].name}]
    assert len(data["examples"]) == 2  # one pair of these two per prompt
    example = data["examples"][0]
    assert {"input_text", "tags", "output_text_a", "output_text_b", "score", "individual_rater_scores"} <= set(example)
    assert example["output_text_a"] == f"Paris ({three[0].slug})" and example["score"] == -1.0
    assert example["tags"] == ["maths"] and len(example["individual_rater_scores"]) == 2
    swapped = json.loads(body(mine.get(f"/suite-runs/{run.id}/export.jsonl?a={three[1].slug}&b={three[0].slug}")))
    assert swapped["examples"][0]["score"] == 1.0
    flips = [[r["is_flipped"] for r in d["examples"][0]["individual_rater_scores"]] for d in (data, swapped)]
    assert flips == [[False, True], [True, False]]  # B shown first: the right side first, or the left when A is right
    assert swapped["examples"][0]["output_text_a"] == f"Paris ({three[1].slug})"
    assert mine.get(f"/suite-runs/{run.id}/export.jsonl?a=nobody").status_code == 404


def test_a_failed_answers_reason_is_shown_to_the_owner(mine, owner, three):
    run = start_run(owner, suite=suite(owner, "Hi?"), contestants=three[:2])
    from arena.suite_runs import runner

    runner.step(run)
    gen = live(run)[0]
    gen.finish(Generation.Status.FAILED, text="", reason="The prompt is longer than the context.")
    assert "The prompt is longer than the context." in mine.get(run.get_absolute_url()).content.decode()


def test_answers_and_judgements_are_shown_inert(mine, owner, three):
    run = judged_run(owner, three, answer="<script>alert(1)</script><img src=x onerror=alert(2)>")
    from arena.history.models import ShareLink

    link = ShareLink.share(owner, run)
    for url in (run.get_absolute_url(), f"/s/{link.token}/"):
        html = mine.get(url).content.decode()
        assert "alert(1)" in html and "<script>alert" not in html and "<img src=x" not in html, url


def test_the_history_list_and_the_shared_page_name_a_whole_jury(mine, owner, catalogue):
    jury = catalogue[2:5]
    run = start_run(owner, suite=suite(owner, "One?"), contestants=catalogue[:2], judges=jury)
    listed = mine.get("/history/suite-runs/").content.decode()
    assert f"judges: {jury[0].label or jury[0].name} and 2 more" in listed
    from arena.history.models import ShareLink

    shared = mine.get(f"/s/{ShareLink.share(owner, run).token}/").content.decode()
    assert "judges: " + ", ".join(model.name for model in jury) in shared
