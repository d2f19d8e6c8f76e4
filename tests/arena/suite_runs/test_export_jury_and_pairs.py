"""A suite run's exports and charts name its whole jury (the run's judges, and each verdict's), and the LLM
Comparator export compares the pair the user chooses (the first two contestants unless chosen, as
the run page's form says) or every pair, one file each in a .zip. Runs are driven by hand
(running.run_with_judges): each generation is finished by the test as its run would."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from arena.suite_runs.actions import start_run
from tests.arena.factories import suite
from tests.arena.suite_runs.running import PREFERS_LEFT, PREFERS_RIGHT, run_with_judges

pytestmark = pytest.mark.django_db


@pytest.fixture
def jury_run(owner, catalogue):
    """Three contestants, judged by a jury of three (two prefer the left answer, one the right)."""
    contestants, judges = catalogue[:3], catalogue[3:6]
    run = start_run(owner, suite=suite(owner, "Capital of France?"), contestants=contestants, judges=judges)
    run_with_judges(run, dict(zip([j.slug for j in judges], (PREFERS_LEFT, PREFERS_LEFT, PREFERS_RIGHT), strict=True)))
    return run, contestants, judges


def test_the_json_export_names_every_judge_of_the_jury(mine, jury_run):
    run, _contestants, judges = jury_run
    slugs = [j.slug for j in judges]
    document = json.loads(mine.get(f"/suite-runs/{run.id}/export.json").getvalue())
    assert document["run"]["judges"] == slugs and document["run"]["judge"] == slugs[0]
    assert len(document["verdicts"]) == 3
    assert all(v["jury"] == slugs for v in document["verdicts"])

    history = json.loads(b"".join(mine.get("/history/export/battles.json").streaming_content))
    assert {tuple(row["jury"]) for row in history["rows"] if row["mode"] == "suite"} == {tuple(slugs)}


def test_llm_comparator_exports_the_chosen_pair_the_first_two_by_default(mine, jury_run):
    run, (a, b, c), _judges = jury_run
    url = f"/suite-runs/{run.id}/export.jsonl"
    chosen = json.loads(mine.get(url, {"pair": f"{a.slug},{c.slug}"}).getvalue())
    assert [m["name"] for m in chosen["models"]] == [a.name, c.name] and len(chosen["examples"]) == 1
    default = json.loads(mine.get(url).getvalue())
    assert [m["name"] for m in default["models"]] == [a.name, b.name]
    assert mine.get(url, {"pair": f"{a.slug},{a.slug}"}).status_code == 404

    page = mine.get(run.get_absolute_url()).content.decode()
    assert f'value="{a.slug},{b.slug}"' in page and "(default)" in page and f'value="{b.slug},{c.slug}"' in page
    assert 'value="all"' in page and "every pair (3 files in a .zip)" in page


def test_llm_comparator_exports_every_pair_in_a_zip(mine, jury_run):
    run, (a, b, c), _judges = jury_run
    response = mine.get(f"/suite-runs/{run.id}/export.jsonl", {"pair": "all"})
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    names = sorted(archive.namelist())
    assert names == sorted(f"llm-comparator-{x.slug}-vs-{y.slug}.json" for x, y in ((a, b), (a, c), (b, c)))
    for name in names:
        document = json.loads(archive.read(name))
        assert len(document["models"]) == 2 and len(document["examples"]) == 1


def test_the_charts_note_says_a_jury_rated_them(mine, jury_run):
    run, _contestants, _judges = jury_run
    page = mine.get(run.get_absolute_url()).content.decode()
    assert "Ratings from this run's jury: on each pair, the majority of its 3 judges" in page
    assert "judge's verdicts;" not in page
