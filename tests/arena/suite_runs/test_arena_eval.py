"""`manage.py arena_eval`, the CI gate (arena/suite_runs/management/commands/arena_eval.py), on a
real database: its exit codes (0 passed, 1 below --min-pass, an answer that never came, a
regression against --against or a run out of time, 2 bad input with a sentence and nothing
saved), its JUnit XML (read back with xml.etree) and its JSON summary. No Celery worker runs
here: the command's wait between polls is this module's, which takes the runner's step and ends
each live generation as a worker would (tests/arena/suite_runs/running.py does the same for the
runner's own tests); tests/live/test_arena_eval_live.py runs it against a live app and real models."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from arena.generations.models import Generation
from arena.suite_runs import runner
from arena.suite_runs.management.commands import arena_eval
from arena.suite_runs.models import SuiteRun
from arena.suites.models import Suite
from tests.arena.factories import finish
from tests.arena.suite_runs.running import live

pytestmark = pytest.mark.django_db

SUITE_YAML = """\
name: Release gate
defaults:
  checks: [{type: words, max: 6, name: brief}]
prompts:
  - prompt: Capital of France?
    checks: [{type: contains, value: Paris, name: names Paris}]
  - prompt: Two plus two?
    checks: [{type: number, value: 4, name: four}]
  - prompt: Say hello.
"""
GOOD = {"Capital of France?": "Paris.", "Two plus two?": "4", "Say hello.": "Hello."}


class Workers:
    """What the command's wait does here: a step of every live run, then each live generation
    ended with texts[(prompt, slug)] (else GOOD[prompt]); a prompt in `fail` fails every attempt."""

    def __init__(self, texts=None, fail=()):
        self.texts, self.fail = texts or {}, set(fail)

    def __call__(self, _seconds):
        for run in SuiteRun.objects.filter(state=SuiteRun.State.RUNNING):
            runner.step(run)
            for gen in live(run):
                if (gen.prompt, gen.model.slug) in self.fail:
                    finish(gen, "", status=Generation.Status.FAILED)
                else:
                    finish(gen, self.texts.get((gen.prompt, gen.model.slug), GOOD.get(gen.prompt, "?")))


@pytest.fixture
def suite_file(tmp_path):
    path = tmp_path / "gate.yaml"
    path.write_text(SUITE_YAML)
    return path


@pytest.fixture
def two(catalogue):
    return ",".join(m.slug for m in catalogue[:2])


def evaluate(monkeypatch, *args, workers=None) -> tuple[int, str, str]:
    """The command's exit code, stdout and stderr (as manage.py would exit)."""
    monkeypatch.setattr(arena_eval, "sleep", workers or Workers())
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("arena_eval", *[str(a) for a in args], stdout=out, stderr=err)
    except CommandError as exc:
        return exc.returncode, out.getvalue(), err.getvalue() + str(exc)
    return 0, out.getvalue(), err.getvalue()


def test_a_passing_run_exits_0_with_the_table_junit_and_json(monkeypatch, suite_file, two, tmp_path, catalogue):
    junit, summary = tmp_path / "out.xml", tmp_path / "out.json"
    code, out, err = evaluate(monkeypatch, suite_file, "--models", two, "--junit", junit, "--json", summary)
    assert code == 0, err
    assert "The gate passed." in err
    a, b = catalogue[:2]
    assert a.slug in out and b.slug in out and "100% (" in out and "Wilson" in out
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "6" and root.get("failures") == "0"
    assert [s.get("name") for s in root.iter("testsuite")] == [a.slug, b.slug]
    names = [case.get("name") for case in root.iter("testcase")]
    assert names[:3] == ["#1: Capital of France?", "#2: Two plus two?", "#3: Say hello."]
    body = json.loads(summary.read_text())
    assert body["passed"] and body["exit_code"] == 0 and body["suite"]["new_version"]
    assert [(r["model"], r["passed"], r["checked"]) for r in body["contestants"]] == [(a.slug, 3, 3), (b.slug, 3, 3)]
    assert body["contestants"][0]["low"] < 1 == body["contestants"][0]["high"]
    assert Suite.objects.get().name == "Release gate" and SuiteRun.objects.get().state == "done"


def test_below_the_threshold_exits_1_and_the_junit_names_what_failed(monkeypatch, suite_file, two, tmp_path,
                                                                      catalogue):
    a = catalogue[0]
    junit, summary = tmp_path / "out.xml", tmp_path / "out.json"
    workers = Workers({("Two plus two?", a.slug): "Five, I would say, almost surely 5."})
    code, out, err = evaluate(monkeypatch, suite_file, "--models", two, "--min-pass", "0.9", "--junit", junit,
                              "--json", summary, workers=workers)
    assert code == 1
    assert f"{a.slug} passes 2 of 3 (67%), below 90%." in err
    assert "four ×1" in out and "brief ×1" in out and "FAIL" in out
    root = ET.parse(junit).getroot()
    assert root.get("failures") == "1"
    (failed,) = [case for case in root.iter("testcase") if case.find("failure") is not None]
    failure = failed.find("failure")
    assert failed.get("name") == "#2: Two plus two?" and failed.get("classname") == f"Release gate.{a.slug}"
    assert failure.get("message") == "failed 2 of 2 checks: brief, four"
    assert "four: expected" in failure.text and "got" in failure.text
    assert failed.find("system-out").text == "Five, I would say, almost surely 5."
    assert json.loads(summary.read_text())["exit_code"] == 1
    # The same run passes a lower bar: 2 of 3 is at least 0.6.
    assert evaluate(monkeypatch, suite_file, "--models", two, "--min-pass", "0.6", workers=workers)[0] == 0


def test_against_an_earlier_run_a_regression_exits_1(monkeypatch, suite_file, two, tmp_path, catalogue):
    a, b = catalogue[:2]
    summary = tmp_path / "first.json"
    assert evaluate(monkeypatch, suite_file, "--models", two, "--json", summary)[0] == 0
    first = json.loads(summary.read_text())["run"]["id"]
    # The same file again: no new version, the same suite; b now fails the France prompt.
    junit, summary = tmp_path / "second.xml", tmp_path / "second.json"
    code, out, err = evaluate(monkeypatch, suite_file, "--models", two, "--against", first, "--min-pass", "0.5",
                              "--junit", junit, "--json", summary,
                              workers=Workers({("Capital of France?", b.slug): "Lyon."}))
    assert code == 1 and f"1 regression against run {first}." in err
    assert f"{b.slug} on #1 'Capital of France?': now fails (names Paris)" in out
    body = json.loads(summary.read_text())
    assert not body["suite"]["new_version"] and body["against"]["regressions"] == 1
    assert Suite.objects.count() == 1
    (failure,) = ET.parse(junit).getroot().iter("failure")
    assert failure.get("type") == "regression" and failure.get("message").endswith("(a regression)")
    # A new version (a prompt reworded, one added) keeps the old runs; prompts match by their text.
    suite_file.write_text(SUITE_YAML.replace("Say hello.", "Say hello politely."))
    code, _out, err = evaluate(monkeypatch, suite_file, "--models", f"{b.slug},{a.slug}", "--against", first,
                               "--json", summary, workers=Workers({("Say hello politely.", a.slug): "Hello."}))
    assert code == 0, err
    body = json.loads(summary.read_text())
    assert body["suite"]["new_version"] and body["suite"]["version"] == 2
    assert body["against"]["comparison"]["prompts"]["matched"] == 2
    assert SuiteRun.objects.get(id=first).suite_version == 1


def test_a_pair_compares_a_new_model_with_the_one_it_replaces(monkeypatch, suite_file, tmp_path, catalogue):
    a, b, c = catalogue[:3]
    summary = tmp_path / "s.json"
    assert evaluate(monkeypatch, suite_file, "--models", f"{a.slug},{b.slug}", "--json", summary)[0] == 0
    first = json.loads(summary.read_text())["run"]["id"]
    code, _out, err = evaluate(monkeypatch, suite_file, "--models", f"{a.slug},{c.slug}", "--against", first,
                               "--pair", f"{c.slug}:{b.slug}", "--json", summary, "--min-pass", "0.5",
                               workers=Workers({("Two plus two?", c.slug): "3"}))
    assert code == 1 and "1 regression" in err
    pairs = json.loads(summary.read_text())["against"]["comparison"]["pairs"]
    assert pairs == [{"later": a.slug, "earlier": a.slug}, {"later": c.slug, "earlier": b.slug}]


def test_an_answer_that_never_came_fails_the_gate_as_an_error(monkeypatch, suite_file, two, tmp_path, catalogue):
    a = catalogue[0]
    junit = tmp_path / "out.xml"
    code, out, err = evaluate(monkeypatch, suite_file, "--models", two, "--min-pass", "0", "--junit", junit,
                              workers=Workers(fail={("Say hello.", a.slug)}))
    assert code == 1 and f"{a.slug}: 1 answer never came." in err and "1 no answer" in out
    root = ET.parse(junit).getroot()
    (error,) = root.iter("error")
    assert error.get("type") == "no_answer" and root.get("errors") == "1"


def test_a_run_out_of_time_is_cancelled_and_fails(monkeypatch, suite_file, two, tmp_path):
    ticks = iter(range(0, 10_000, 5))
    monkeypatch.setattr(arena_eval, "clock", lambda: next(ticks))
    summary = tmp_path / "s.json"
    code, _out, err = evaluate(monkeypatch, suite_file, "--models", two, "--timeout", "12", "--json", summary,
                               workers=lambda _s: None)  # no worker answers
    assert code == 1 and "did not end within 12 s and was cancelled" in err
    body = json.loads(summary.read_text())
    assert body["run"]["timed_out"] and body["run"]["state"] == "cancelled"
    assert SuiteRun.objects.get().state == SuiteRun.State.CANCELLED


def test_what_xml_cannot_hold_is_replaced(monkeypatch, suite_file, two, tmp_path, catalogue):
    junit = tmp_path / "out.xml"
    nasty = "Paris \x07\x1b[31m <![CDATA[ ]]> </failure> \ufffe"
    workers = Workers({("Capital of France?", catalogue[0].slug): nasty})
    evaluate(monkeypatch, suite_file, "--models", two, "--junit", junit, workers=workers)
    outs = [e.text for e in ET.parse(junit).getroot().iter("system-out")]
    assert "Paris \ufffd\ufffd[31m <![CDATA[ ]]> </failure> \ufffd" in outs


BAD = [
    (["missing.yaml", "--models", "{two}"], "Cannot read the suite file"),
    (["{file}", "--models", "nope,{a}"], "No catalogue model has the slug 'nope'"),
    (["{file}", "--models", "{two}", "--owner", "nobody"], "There is no user 'nobody'"),
    (["{file}", "--models", "{two}", "--min-pass", "90"], "--min-pass is a share from 0 to 1"),
    (["{file}", "--models", "{two}", "--timeout", "0"], "--timeout is a number of seconds above 0"),
    (["{file}", "--models", "{a},{a}"], "Each contestant may appear only once"),
    (["{file}", "--models", "{a},{a}"], "Each contestant may appear only once"),
    (["{file}", "--models", "{two}", "--against", "not-a-run"], "has no suite run of that id"),
    (["{file}", "--models", "{two}", "--against", "00000000-0000-0000-0000-000000000000"], "has no suite run"),
    (["{file}", "--models", "{two}", "--pair", "{a}:{a}"], "--pair takes --against"),
    (["{bad_check}", "--models", "{two}"], "regex: not a valid regex"),
    (["{no_checks}", "--models", "{two}"], "has no checks"),
    (["{text}", "--models", "{two}"], "upload a .yaml file"),
]


@pytest.mark.parametrize(("args", "said"), BAD)
def test_bad_input_exits_2_with_a_sentence_and_saves_nothing(monkeypatch, suite_file, tmp_path, catalogue, two,
                                                           args, said):
    (tmp_path / "bad.yaml").write_text("prompts:\n  - prompt: Hi\n    checks: [{type: regex, value: '(a'}]\n")
    (tmp_path / "plain.yaml").write_text("prompts:\n  - Hi\n")
    (tmp_path / "notes.txt").write_text("Hi\n")
    names = {"file": suite_file, "two": two, "a": catalogue[0].slug, "bad_check": tmp_path / "bad.yaml",
             "no_checks": tmp_path / "plain.yaml", "text": tmp_path / "notes.txt"}
    code, _out, err = evaluate(monkeypatch, *[a.format(**names) for a in args])
    assert code == 2 and said in err, err
    assert not Suite.objects.exists() and not SuiteRun.objects.exists()


def test_a_disabled_model_a_foreign_run_and_another_suites_run_are_bad_input(monkeypatch, suite_file, tmp_path,
                                                                            catalogue, two, outsider):
    catalogue[2].enabled = False
    catalogue[2].save()
    code, _out, err = evaluate(monkeypatch, suite_file, "--models", f"{catalogue[0].slug},{catalogue[2].slug}")
    assert code == 2 and "is disabled" in err
    summary = tmp_path / "s.json"
    assert evaluate(monkeypatch, suite_file, "--models", two, "--json", summary, "--owner", outsider.username)[0] == 0
    theirs = json.loads(summary.read_text())["run"]["id"]
    code, _out, err = evaluate(monkeypatch, suite_file, "--models", two, "--against", theirs)  # arena-ci's: not theirs
    assert code == 2 and "has no suite run of that id" in err
    other = tmp_path / "other.yaml"
    other.write_text(SUITE_YAML.replace("Release gate", "Another gate"))
    code, _out, err = evaluate(monkeypatch, other, "--models", two, "--against", theirs, "--owner", outsider.username)
    assert code == 2 and "that run is of the suite 'Release gate', not 'Another gate'" in err
    assert Suite.objects.filter(name="Another gate").count() == 0  # bad input saved nothing
