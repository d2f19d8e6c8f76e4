"""The suite pages: list, create by typing, upload, view, delete, share; owner only."""

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from arena.history.models import ShareLink
from arena.suites.models import Suite
from tests.arena.factories import suite

pytestmark = pytest.mark.django_db


def upload(client, name: str, data: bytes, **fields):
    return client.post("/suites/upload/", {"name": "Uploaded", **fields, "file": SimpleUploadedFile(name, data)})


def test_the_list_shows_only_my_suites_with_their_counts(mine, owner, outsider):
    suite(owner, name="Mine")
    suite(outsider, name="Theirs")
    html = mine.get("/suites/").content.decode()
    assert "Mine" in html and "2 prompts" in html and "Theirs" not in html
    assert 'href="/suites/"' in mine.get("/playground/").content.decode()  # the nav link


def test_typing_prompts_creates_a_suite(mine, owner):
    response = mine.post("/suites/new/", {"name": "  Colours ", "tag": "Fun Stuff",
                                          "prompts": "Name a colour.\r\n---\r\nName two\r\ncolours."})
    created = Suite.objects.get(owner=owner)
    assert response.status_code == 302 and response["Location"] == created.get_absolute_url()
    assert (created.name, created.tag) == ("Colours", "fun-stuff")
    assert [p.prompt for p in created.ordered_prompts()] == ["Name a colour.", "Name two\ncolours."]


def test_typed_prompts_with_problems_save_nothing(mine, settings):
    settings.ARENA_MAX_PROMPT_CHARS = 20
    response = mine.post("/suites/new/", {"name": "", "prompts": "ok\n---\n" + "x" * 21})
    html = response.content.decode()
    assert response.status_code == 400 and "prompt 2: &#x27;prompt&#x27; is 21 characters, at most 20 allowed" in html
    assert not Suite.objects.exists()


def test_uploading_jsonl_and_csv(mine, owner):
    line = {"prompt": "Capital of France?", "reference": "Paris", "json_schema": {"type": "object"}}
    response = upload(mine, "capitals.jsonl", json.dumps(line).encode() + b"\n\n", tag="geo")
    assert response.status_code == 302
    first = Suite.objects.get(owner=owner)
    prompt = first.ordered_prompts().get()
    assert (first.tag, prompt.reference, prompt.json_schema, prompt.constraint) == ("geo", "Paris", line["json_schema"],
                                                                                    "json_schema")
    assert upload(mine, "more.csv", b"prompt,regex\nSay hi,^hi$\nSay bye,\n").status_code == 302
    assert Suite.objects.filter(owner=owner).count() == 2


def test_an_upload_with_errors_lists_each_line_and_saves_nothing(mine):
    data = b'{"prompt": "ok"}\n{"promt": "typo"}\nnot json\n{"prompt": "x", "json_schema": {"type": 5}}\n'
    response = upload(mine, "bad.jsonl", data)
    html = response.content.decode()
    assert response.status_code == 400
    for expected in ("line 2: &#x27;prompt&#x27; is missing", "line 3 is not valid JSON",
                     "line 4: Not a valid JSON schema"):
        assert expected in html
    assert 'enctype="multipart/form-data"' in html and not Suite.objects.exists()


def test_an_upload_over_the_size_limit_or_of_another_kind_is_refused(mine, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    assert "the file is larger than 100 bytes" in upload(mine, "big.csv", b"prompt\n" + b"x" * 200).content.decode()
    assert "upload a .yaml file" in upload(mine, "suite.txt", b"Hi").content.decode()
    assert not Suite.objects.exists()


def test_the_suite_page_shows_every_part_of_each_prompt(mine, owner):
    s = suite(owner, {"prompt": "Capital?", "system_prompt": "Be brief.", "reference": "Paris",
                      "json_schema": {"type": "object", "required": ["city"]}}, {"prompt": "Hi", "regex": "^h<i>$"})
    html = mine.get(s.get_absolute_url()).content.decode()
    for expected in ("Capital?", "Be brief.", "Paris", "&quot;required&quot;", "^h&lt;i&gt;$", 'id="share"',
                     f'action="/suites/{s.id}/delete"'):
        assert expected in html, expected


def test_the_owner_deletes_a_suite(mine, owner):
    s = suite(owner)
    assert mine.post(f"/suites/{s.id}/delete").status_code == 302
    assert not Suite.objects.exists()


def test_a_share_link_shows_the_suite_read_only(mine, owner, client):
    s = suite(owner, {"prompt": "Capital?", "reference": "Paris"})
    assert mine.post(f"/history/share/suite/{s.id}").status_code == 302
    link = ShareLink.objects.get(suite=s)
    page = mine.get(s.get_absolute_url()).content.decode()  # the full link, shown this once
    assert "its prompts, system prompts, reference answers and constraints" in page
    link.token = re.search(r'value="http://testserver/s/([\w-]+)/"', page).group(1)
    assert "prompt suite" in mine.get("/history/shared/").content.decode()
    client.logout()
    html = client.get(link.get_absolute_url()).content.decode()
    assert "Capital?" in html and "Paris" in html and "<form" not in html
