"""A suite kept as a file: upload it, export it, import it again as a new version (page and
API); earlier runs keep the prompts and answers of the version they ran and say which."""

from __future__ import annotations

import pytest
import yaml
from django.core.files.uploadedfile import SimpleUploadedFile

from arena.suite_runs.actions import start_run
from arena.suite_runs.models import SuiteAnswer
from arena.suites.models import Suite
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.suite_runs.running import run_to_end

pytestmark = pytest.mark.django_db

V1 = """\
name: Support replies
tag: support
defaults:
  checks: [{type: words, max: 150}]
prompts:
  - prompt: "Can I return {{item}}?"
    vars: [{item: shoes}, {item: a laptop}]
    reference: Yes, within 30 days.
    checks: [{type: contains, value: refund}]
    tags: [returns]
  - prompt: Say hello.
    regex: "^[A-Z].*"
"""
V2 = V1.replace("{item: a laptop}", "{item: a phone}, {item: a hat}")


def upload(client, text: str, filename: str = "support.yaml", **fields):
    return client.post("/suites/upload/", {**fields, "file": SimpleUploadedFile(filename, text.encode())})


def reimport(client, s: Suite, text: str, filename: str = "support.yaml"):
    return client.post(f"/suites/{s.id}/import", {"file": SimpleUploadedFile(filename, text.encode())})


def texts(prompts) -> list[str]:
    return [p.prompt for p in prompts]


def test_a_yaml_upload_names_the_suite_and_keeps_everything(mine, owner):
    response = upload(mine, V1)
    s = Suite.objects.get(owner=owner)
    assert response.status_code == 302 and (s.name, s.tag, s.version) == ("Support replies", "support", 1)
    assert s.default_checks == [{"type": "words", "max": 150}]
    first, _, hello = s.ordered_prompts()
    assert (first.prompt, first.reference, first.checks, first.tags) == (
        "Can I return shoes?", "Yes, within 30 days.", [{"type": "contains", "value": "refund"}], ["returns"])
    assert hello.regex == "^[A-Z].*" and hello.checks == [] and hello.tags == []
    html = mine.get(s.get_absolute_url()).content.decode()
    assert "version 1" in html and "Import a new version" in html and "contains &quot;refund&quot;" in html


def test_a_typed_name_wins_and_a_file_without_one_needs_it(mine, owner):
    assert upload(mine, V1, "s.yml", name="Mine", tag="t").status_code == 302
    assert Suite.objects.get(owner=owner).name == "Mine"
    response = upload(mine, "prompts: [{prompt: hi}]\n")
    assert response.status_code == 400 and "Give the suite a name" in response.content.decode()
    bad = upload(mine, "prompts:\n  - prompt: hi\n    chekcs: []\n")
    assert bad.status_code == 400 and "line 3, column 5: unknown key &#x27;chekcs&#x27;" in bad.content.decode()


@pytest.mark.parametrize("fmt", ["yaml", "jsonl", "csv"])
def test_the_export_imports_back_as_the_same_version(mine, owner, fmt):
    upload(mine, V1)
    s = Suite.objects.get(owner=owner)
    exported = mine.get(f"/suites/{s.id}/suite.{fmt}")
    assert exported.status_code == 200 and "attachment" in exported["Content-Disposition"]
    assert reimport(mine, s, exported.content.decode(), f"support.{fmt}")["Location"].endswith("?import=same")
    s.refresh_from_db()
    assert s.version == 1 and s.prompts.count() == 3
    assert "no new version" in mine.get(f"{s.get_absolute_url()}?import=same").content.decode()


def test_a_changed_file_makes_version_2_and_an_earlier_run_keeps_version_1(mine, owner, catalogue):
    upload(mine, V1)
    s = Suite.objects.get(owner=owner)
    run = start_run(owner, suite=s, contestants=catalogue[:2])
    run_to_end(run, answer="Refunds within 30 days")
    assert reimport(mine, s, V2)["Location"].endswith("?import=new")
    s.refresh_from_db()
    assert s.version == 2
    assert texts(s.ordered_prompts()) == ["Can I return shoes?", "Can I return a phone?", "Can I return a hat?",
                                          "Say hello."]
    assert texts(s.prompts_of(1)) == ["Can I return shoes?", "Can I return a laptop?", "Say hello."]
    assert mine.get("/suites/").content.decode().count("4 prompts") == 1  # the current version's count

    run.refresh_from_db()
    assert run.suite_version == 1 and texts(run.prompts()) == texts(s.prompts_of(1))
    assert SuiteAnswer.objects.filter(run=run).count() == 6
    page = mine.get(run.get_absolute_url()).content.decode()
    assert "ran version 1 of 2" in page and "Can I return a laptop?" in page and "Refunds within 30 days" in page
    assert "Can I return a phone?" not in page
    newer = start_run(owner, suite=s, contestants=catalogue[:2])
    assert newer.suite_version == 2 and newer.prompts().count() == 4
    assert s.delete_problem  # the runs still refer to it


def test_the_api_imports_a_file_or_a_json_body_and_says_if_it_made_a_version(client, token, owner):
    created = api(client, "post", "/api/v1/suites", token, raw=V1.encode())
    assert created.status_code == 400  # sent as JSON: not a JSON object
    created = client.post("/api/v1/suites", data=V1.encode(), content_type="application/yaml",
                          HTTP_AUTHORIZATION=f"Bearer {token}")
    assert created.status_code == 201, created.content
    data = created.json()
    assert (data["name"], data["version"], data["prompt_count"]) == ("Support replies", 1, 3)
    assert data["default_checks"] == [{"type": "words", "max": 150}]
    assert data["prompts"][0]["checks"] == [{"type": "contains", "value": "refund"}]
    assert_conforms(data, "/api/v1/suites", "post", 201)
    url = f"/api/v1/suites/{data['id']}"

    def put(body: bytes, content_type: str):
        return client.put(url, data=body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {token}")

    same = put(V1.encode(), "application/yaml")
    assert same.status_code == 200 and same.json()["new_version"] is False and same.json()["version"] == 1
    changed = put(V2.encode(), "text/yaml")
    assert changed.json()["new_version"] is True and changed.json()["version"] == 2
    assert changed.json()["prompt_count"] == 4
    assert_conforms(changed.json(), "/api/v1/suites/{id}", "put", 200)
    body = {"prompts": [{"prompt": "Only this", "tags": ["x"]}], "default_checks": []}
    as_json = api(client, "put", url, token, body).json()
    assert (as_json["version"], as_json["name"], as_json["prompt_count"]) == (3, "Support replies", 1)
    bad = put(b"prompts:\n  - prompt: '{{x}}'\n", "application/yaml")
    assert bad.status_code == 400 and "uses {{x}} but no 'vars' give a value" in bad.json()["error"]["message"]
    assert Suite.objects.get(id=data["id"]).version == 3

    jsonl = client.post("/api/v1/suites?name=Lines&tag=Geo", data=b'{"prompt": "Capital of Peru?"}\n',
                        content_type="application/jsonl", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert jsonl.status_code == 201 and (jsonl.json()["name"], jsonl.json()["tag"]) == ("Lines", "geo")

    exported = client.get(f"{url}/suite.yaml", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert exported.status_code == 200 and yaml.safe_load(exported.content)["prompts"] == [
        {"prompt": "Only this", "tags": ["x"]}]
    assert client.get(f"{url}/suite.txt", HTTP_AUTHORIZATION=f"Bearer {token}").status_code == 404


def test_another_users_suite_cannot_be_imported_into(client, owner, outsider):
    from arena.accounts.models import ApiToken

    s = Suite.objects.create(owner=owner, name="Mine")
    theirs = ApiToken.issue(outsider)
    response = client.put(f"/api/v1/suites/{s.id}", data=V1.encode(), content_type="application/yaml",
                          HTTP_AUTHORIZATION=f"Bearer {theirs}")
    assert response.status_code == 404
    client.force_login(outsider)
    assert reimport(client, s, V1).status_code == 404
    assert client.get(f"/suites/{s.id}/suite.yaml").status_code == 404


BEFORE_VERSIONS = [("suites", "0004_checks_and_prompt_tags"), ("suite_runs", "0004_judge_check")]


@pytest.mark.django_db(transaction=True)
def test_suites_and_runs_from_before_versions_are_on_version_1():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    from arena.suite_runs.models import SuiteRun

    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_VERSIONS)
    executor.loader.build_graph()
    old = executor.loader.project_state(BEFORE_VERSIONS).apps
    try:
        user = old.get_model("auth", "User").objects.create(username="before")
        suite = old.get_model("suites", "Suite").objects.create(owner=user, name="Colours")
        old.get_model("suites", "SuitePrompt").objects.create(suite=suite, position=1, prompt="Name a colour.")
        old.get_model("suite_runs", "SuiteRun").objects.create(owner=user, suite=suite)
    finally:
        MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    run = SuiteRun.objects.get()
    assert (run.suite_version, run.suite.version) == (1, 1)
    assert texts(run.prompts()) == texts(run.suite.ordered_prompts()) == ["Name a colour."]
