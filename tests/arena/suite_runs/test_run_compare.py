"""A suite run compared with an earlier run of its suite, on a real database: the API
(GET /api/v1/suite-runs/<id>/compare/<earlier_id>, its body checked against the OpenAPI
description), the picker and comparison pages, prompts matched by text across a new version,
contestants paired by choice, and every refusal: another user's runs, runs of two suites, a run
against itself, pairs that name nobody. The pure core is tested in test_comparison.py; a real
run in Chromium in tests/live/test_suite_compare_browser.py."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from arena.accounts.models import ApiToken
from arena.suite_runs import runner
from arena.suite_runs.actions import start_run
from arena.suite_runs.models import SuiteRun
from arena.suites import parsing
from arena.suites.actions import create_suite, import_version
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import finish
from tests.arena.suite_runs.running import live

pytestmark = pytest.mark.django_db

PATH = "/api/v1/suite-runs/{id}/compare/{earlier_id}"
PROMPTS = [
    {"prompt": "Capital of France?", "checks": [{"type": "contains", "value": "Paris", "name": "names Paris"}]},
    {"prompt": "Say hello.", "checks": [{"type": "contains", "value": "hello", "ignore_case": True,
                                         "name": "greets"}]},
    {"prompt": "Two plus two?", "checks": [{"type": "number", "value": 4, "name": "four"}]},
]
DEFAULTS = [{"type": "words", "max": 8, "name": "brief"}]


def make_suite(owner, prompts=PROMPTS, name="Gate"):
    specs = parsing.api_items(prompts)
    return create_suite(owner, name=name, prompts=specs, default_checks=parsing.check_defaults(DEFAULTS, specs))


def run_answering(owner, suite, contestants, texts) -> SuiteRun:
    """A run of `contestants` ended with texts[(prompt text, slug)] (default "Paris, hello, 4.")."""
    run = start_run(owner, suite=suite, contestants=contestants, params={"temperature": 0})
    for _ in range(50):
        runner.step(run)
        for gen in live(run):
            finish(gen, texts.get((gen.prompt, gen.model.slug), "Paris, hello, 4."),
                   rate=texts.get(("rate", gen.model.slug), 12.5))
        run.refresh_from_db()
        if not run.live:
            return run
    raise AssertionError("the run never ended")


@pytest.fixture
def two_runs(owner, catalogue):
    """Version 1 run by a and b (all pass); version 2 (one prompt's text changed, one added) run by
    a and c: a now fails on France, c (standing for b) now fails on two plus two, by 'brief' too."""
    a, b, c = catalogue[:3]
    suite = make_suite(owner)
    earlier = run_answering(owner, suite, [a, b], {("rate", b.slug): 20.0})
    v2 = [PROMPTS[0], {**PROMPTS[1], "prompt": "Say hello, politely."}, PROMPTS[2],
          {"prompt": "Name a colour.", "checks": [{"type": "contains", "value": "blue", "name": "blue"}]}]
    specs = parsing.api_items(v2)
    assert import_version(suite, parsing.SuiteFile(specs, default_checks=DEFAULTS))
    later = run_answering(owner, suite, [a, c], {
        ("Capital of France?", a.slug): "Lyon, hello, 4.",
        ("Two plus two?", c.slug): "It is five, I would think, or maybe 5.",
        ("rate", c.slug): 40.0})
    return earlier, later, (a, b, c)


def get(client, token, run, earlier, query=""):
    return api(client, "get", f"/api/v1/suite-runs/{run.id}/compare/{earlier.id}{query}", token)


def test_the_api_lists_regressions_first_with_rates_and_speeds(client, token, two_runs):
    earlier, later, (a, b, c) = two_runs
    response = get(client, token, later, earlier, f"?pair={c.slug}:{b.slug}")
    assert response.status_code == 200, response.content
    body = response.json()
    assert_conforms(body, PATH)
    assert body["pairs"] == [{"later": a.slug, "earlier": a.slug}, {"later": c.slug, "earlier": b.slug}]
    assert body["prompts"]["matched"] == 2  # France and two plus two: the hello prompt's text changed
    assert [p["prompt"] for p in body["prompts"]["only_earlier"]] == ["Say hello."]
    assert [p["prompt"] for p in body["prompts"]["only_later"]] == ["Say hello, politely.", "Name a colour."]
    assert "matched by their text" in body["prompt_matching"]
    first, second = body["changes"][:2]
    assert (first["kind"], first["later"], first["prompt"]) == ("regressed", a.slug, "Capital of France?")
    assert [ch["name"] for ch in first["checks"] if ch["before"] == "pass" and ch["after"] == "fail"] == ["names Paris"]
    failing = {ch["name"]: ch for ch in second["checks"] if ch["after"] == "fail"}
    assert second["kind"] == "regressed" and set(failing) == {"brief", "four"}
    assert "got" in failing["four"] and failing["four"]["got"]
    assert body["regressions"] == 2 and body["counts"]["still_passes"] == 2
    rates = {r["later"]: r for r in body["pass_rates"]["pairs"]}
    assert rates[a.slug]["before"]["passed"] == 2 and rates[a.slug]["after"]["passed"] == 1
    assert rates[a.slug]["difference"] == -0.5 and rates[a.slug]["interval"][0] < -0.5 < rates[a.slug]["interval"][1]
    assert "Newcombe" in body["pass_rates"]["method"]
    speed = next(s for s in body["speeds"]["pairs"] if s["later"] == c.slug and s["measure"] == "tokens_per_s")
    assert (speed["before"]["median"], speed["after"]["median"], speed["ratio"]) == (20.0, 40.0, 2.0)
    assert body["run"]["id"] == str(later.id) and body["earlier"]["suite_version"] == 1 and not body["partial"]


def test_by_default_only_the_same_entries_are_compared(client, token, two_runs):
    earlier, later, (a, b, c) = two_runs
    body = get(client, token, later, earlier).json()
    assert body["pairs"] == [{"later": a.slug, "earlier": a.slug}]
    assert body["unmatched"] == {"later": [c.slug], "earlier": [b.slug]}
    none = get(client, token, later, earlier, f"?pair={a.slug}:").json()  # a compared with nobody
    assert none["pairs"] == [] and none["changes"] == [] and none["regressions"] == 0


@pytest.mark.parametrize(("query", "said"), [
    ("?pair=nobody:x", "'nobody' is not a contestant of this run"),
    ("?pair={a}:nobody", "'nobody' is not a contestant of the earlier run"),
    ("?pair={a}:{a}&pair={a}:{b}", "paired twice"),
    ("?pair=no-colon", "pair takes"),
    ("?" + "&".join(["pair=x:y"] * 17), "at most 16"),
    ("?pair=" + "z" * 5000 + ":x", "'" + "z" * 80 + "' is not a contestant"),
])
def test_pairs_that_name_nobody_are_refused_with_a_sentence(client, token, two_runs, query, said):
    earlier, later, (a, b, _c) = two_runs
    response = get(client, token, later, earlier, query.format(a=a.slug, b=b.slug))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and said in error["message"] and "pair" in error["fields"]
    assert len(error["message"]) < 400  # a huge value is not echoed back


def test_another_users_runs_are_404_either_way_round(client, two_runs, owner, catalogue):
    earlier, later, (a, b, _c) = two_runs
    stranger = get_user_model().objects.create_user("stranger", password="stranger-pass-1")
    theirs = run_answering(stranger, make_suite(stranger), [a, b], {})
    token = ApiToken.issue(stranger)
    for run, other in ((later, earlier), (theirs, earlier), (later, theirs), (earlier, theirs)):
        response = get(client, token, run, other)
        assert response.status_code == 404, (run, other)
        assert response.json()["error"]["code"] == "not_found"
    mine = ApiToken.issue(owner)
    assert get(client, mine, later, theirs).status_code == 404 and get(client, mine, theirs, later).status_code == 404
    assert get(client, None, later, earlier).status_code == 401


def test_runs_of_two_suites_or_a_run_against_itself_are_refused(client, token, owner, two_runs):
    _earlier, later, (a, b, _c) = two_runs
    other = run_answering(owner, make_suite(owner, name="Another"), [a, b], {})
    response = get(client, token, later, other)
    assert response.status_code == 400 and "two different suites" in response.json()["error"]["message"]
    assert "earlier_id" in response.json()["error"]["fields"]
    assert get(client, token, later, later).status_code == 400
    response = api(client, "get", f"/api/v1/suite-runs/{later.id}/compare/not-a-uuid", token)
    assert response.status_code == 404 and response["Content-Type"] == "application/json"


def test_the_pages_link_both_ways_and_show_the_comparison(client, owner, two_runs):
    earlier, later, (_a, b, c) = two_runs
    client.force_login(owner)
    compare_url = f"/suite-runs/{later.id}/compare/{earlier.id}/"
    for run in (earlier, later):
        page = client.get(f"/suite-runs/{run.id}/").content.decode()
        assert f'href="/suite-runs/{run.id}/compare/"' in page and "Compare with an earlier run" in page
        pick = client.get(f"/suite-runs/{run.id}/compare/").content.decode()
        assert f'href="{compare_url}"' in pick  # the later run first, whichever page it was picked from
    response = client.get(compare_url + f"?pair={c.slug}:{b.slug}")
    assert response.status_code == 200
    text = response.content.decode()
    assert 'data-regressions="2"' in text and "2 regressions" in text
    assert f'<option value="{c.slug}:{b.slug}" selected>' in text
    assert "matched by their text" in text and "Say hello, politely." in text
    assert 'data-kind="regressed"' in text and "<strong>names Paris</strong> now fails" in text
    assert "Newcombe" in text
    bad = client.get(compare_url + "?pair=nobody:x")
    assert bad.status_code == 400 and "is not a contestant of this run" in bad.content.decode()
    assert client.get(f"/suite-runs/{later.id}/compare/{later.id}/").status_code == 400


def test_the_pages_are_the_owners_only(client, two_runs, outsider):
    earlier, later, _ = two_runs
    client.force_login(outsider)
    assert client.get(f"/suite-runs/{later.id}/compare/{earlier.id}/").status_code == 404
    assert client.get(f"/suite-runs/{later.id}/compare/").status_code == 404
    client.logout()
    response = client.get(f"/suite-runs/{later.id}/compare/{earlier.id}/")
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]
