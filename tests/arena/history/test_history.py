"""History lists, read-only share links and exports: ownership, search, pagination,
blindness (no model name before a tournament's reveal, in any of them), revocation,
CSV/JSON exports with formula-injection escaping, and the API's export endpoints.

No model runs here: battles' tasks are only enqueued on commit, which a test transaction
never reaches; a test finishes generations itself, as the task would."""

import csv
import io
import json
import re

import pytest
from django.urls import reverse
from django.utils import timezone

from arena.battles.actions import vote
from arena.generations.export import csv_cell
from arena.history import export, view_counts
from arena.history.models import NEW_LINKS, ShareLink
from arena.tournaments.actions import pick_winner, start_tournament
from arena.tournaments.models import Tournament
from tests.arena.api_client import api
from tests.arena.factories import BLIND_PARAMS, PARAMS, comparison, finish, generation, identifiers
from tests.figures import shows_figure

pytestmark = pytest.mark.django_db


# --- helpers -----------------------------------------------------------------------------
def tournament(owner, catalogue, prompt="Which colour is the sky?"):
    return start_tournament(owner, contestants=catalogue, prompt=prompt, params=BLIND_PARAMS, seeding="given")


@pytest.fixture
def catalogue(catalogue):
    """The default catalogue's first four: tournaments here are brackets of four."""
    return catalogue[:4]


def play_through(t):
    while (match := Tournament.objects.get(id=t.id).current_match()) is not None:
        for _side, gen in match.battle.sides:
            finish(gen, "An answer.")
        match.battle.refresh_from_db()
        t.refresh_from_db()
        pick_winner(t, match, "left")
    t.refresh_from_db()
    return t


_TOKENS: dict[str, str] = {}  # link id -> token, as the owner's session held it (only a digest is stored)


def share(client, obj):
    kind = obj._meta.model_name
    response = client.post(reverse("share-create", args=[kind, obj.id]))
    _TOKENS.update(client.session.get(NEW_LINKS, {}))
    return response


def token_of(link) -> str:
    return _TOKENS[str(link.id)]


def url_of(link) -> str:
    return f"/s/{token_of(link)}/"


def rows_of(html: str) -> list[str]:
    return re.findall(r'<tr data-id="([0-9a-f-]+)"', html)


def read_csv(response) -> list[dict]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


def read_json(response) -> dict:
    return json.loads(b"".join(response.streaming_content))


# --- the lists -----------------------------------------------------------------------------
@pytest.mark.parametrize("url", ["/history/", "/history/comparisons/", "/history/tournaments/", "/history/shared/",
                                 "/history/export/battles.csv", "/history/export/generations.json"])
def test_history_needs_a_login(client, url):
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_each_list_shows_only_the_owners_objects_newest_first(client, owner, outsider, catalogue):
    mine_old = generation(owner, catalogue[0], "my old prompt", text="x", ago=60)
    mine_new = generation(owner, catalogue[1], "my new prompt", text="y")
    theirs = generation(outsider, catalogue[0], "their prompt", text="z")
    my_battle = comparison(owner, catalogue[0], catalogue[3])
    their_battle = comparison(outsider, catalogue[0], catalogue[3])
    my_t, their_t = tournament(owner, catalogue), tournament(outsider, catalogue)
    client.force_login(owner)

    html = client.get("/history/").content.decode()
    # Playground generations only: a battle's answers are reached through the battle.
    assert rows_of(html) == [str(mine_new.id), str(mine_old.id)]
    assert mine_new.get_absolute_url() in html and str(theirs.id) not in html
    assert str(my_battle.left_id) not in html

    html = client.get("/history/comparisons/").content.decode()
    assert rows_of(html) == [str(my_battle.id)] and my_battle.get_absolute_url() in html
    assert str(their_battle.id) not in html
    assert "SmolLM2 135M Instruct" in html and "Gemma 3 270M (base)" in html  # a named comparison

    html = client.get("/history/tournaments/").content.decode()
    assert rows_of(html) == [str(my_t.id)] and my_t.get_absolute_url() in html and str(their_t.id) not in html
    assert 'href="/history/"' in client.get("/playground/").content.decode()  # the nav link


def test_search_finds_by_prompt_and_system_prompt_case_insensitively(client, owner, outsider, catalogue):
    haiku = generation(owner, catalogue[0], "Write a HAIKU about autumn", text="Leaves.")
    system = generation(owner, catalogue[0], "Go on.", system_prompt="You write haiku only.", text="Snow.")
    other = generation(owner, catalogue[0], "Name a colour.", text="Blue.")
    generation(outsider, catalogue[0], "A haiku please", text="No.")
    battle = comparison(owner, catalogue[0], catalogue[3], "Compare haiku forms")
    comparison(owner, catalogue[0], catalogue[3], "Something else")
    t = tournament(owner, catalogue, "Best haiku wins")
    tournament(owner, catalogue, "Nothing relevant")
    client.force_login(owner)

    found = rows_of(client.get("/history/", {"q": "haiku"}).content.decode())
    assert set(found) == {str(haiku.id), str(system.id)} and str(other.id) not in found
    assert rows_of(client.get("/history/comparisons/", {"q": "HAIKU"}).content.decode()) == [str(battle.id)]
    assert rows_of(client.get("/history/tournaments/", {"q": "haiku"}).content.decode()) == [str(t.id)]
    # Every word must appear; a quoted phrase stays whole.
    assert rows_of(client.get("/history/", {"q": "haiku autumn"}).content.decode()) == [str(haiku.id)]
    assert rows_of(client.get("/history/", {"q": '"haiku about"'}).content.decode()) == [str(haiku.id)]
    assert rows_of(client.get("/history/", {"q": '"about haiku"'}).content.decode()) == []
    html = client.get("/history/", {"q": "zebra"}).content.decode()
    assert rows_of(html) == [] and "Nothing here matches" in html


def test_search_never_matches_model_names(client, owner, catalogue):
    """A search by model name would tell which blind battles a model played in."""
    generation(owner, catalogue[3], "Name a colour.", text="Blue.")
    client.force_login(owner)
    assert rows_of(client.get("/history/", {"q": "gemma"}).content.decode()) == []


def test_tag_filter_and_the_tag_column(client, owner, catalogue):
    coding = generation(owner, catalogue[0], "Reverse a list", tag="coding", text="x")
    generation(owner, catalogue[0], "Name a colour.", tag="", text="y")
    battle = comparison(owner, catalogue[0], catalogue[3], "Sort it", tag="coding")
    comparison(owner, catalogue[0], catalogue[3], "Paint it")
    client.force_login(owner)
    html = client.get("/history/", {"tag": "Coding"}).content.decode()  # normalised like the forms
    assert rows_of(html) == [str(coding.id)] and 'href="?tag=coding"' in html
    assert rows_of(client.get("/history/comparisons/", {"tag": "coding"}).content.decode()) == [str(battle.id)]
    assert rows_of(client.get("/history/", {"tag": "no such tag!"}).content.decode()) == []
    rows = read_csv(client.get("/history/export/battles.csv", {"tag": "coding"}))
    assert [r["id"] for r in rows] == [str(battle.id)] and rows[0]["tag"] == "coding"


def test_lists_are_paginated_by_25_and_keep_the_search(client, owner, catalogue):
    gens = [generation(owner, catalogue[0], f"colour question {i}", text="x", ago=i) for i in range(30)]
    generation(owner, catalogue[0], "unrelated", text="x")
    client.force_login(owner)
    first = client.get("/history/", {"q": "colour"}).content.decode()
    assert rows_of(first) == [str(g.id) for g in gens[:25]]
    assert "Page 1 of 2" in first and 'href="?q=colour&amp;page=2"' in first
    second = client.get("/history/", {"q": "colour", "page": 2}).content.decode()
    assert rows_of(second) == [str(g.id) for g in gens[25:]]
    assert rows_of(client.get("/history/", {"q": "colour", "page": 99}).content.decode()) == rows_of(second)


# --- blindness -----------------------------------------------------------------------------
def test_an_unrevealed_tournament_names_no_model_in_history_share_pages_or_exports(
        client, owner, catalogue):
    t = tournament(owner, catalogue)
    battle = t.current_match().battle
    finish(battle.left, "Answer one.")
    finish(battle.right, "Answer two.")
    client.force_login(owner)
    assert share(client, t).status_code == 302 and share(client, battle).status_code == 302
    # A blind side's generation cannot be shared (nor opened) before the reveal.
    assert share(client, battle.left).status_code == 404
    assert not ShareLink.objects.filter(generation=battle.left).exists()

    pages = {url: client.get(url) for url in (
        "/history/", "/history/comparisons/", "/history/tournaments/", "/history/shared/",
        t.get_absolute_url(), battle.get_absolute_url())}
    for link in ShareLink.objects.all():
        pages[url_of(link)] = client.get(url_of(link))
        pages["anonymous " + url_of(link)] = client.__class__().get(url_of(link))
    for name in ("battles", "generations"):
        for fmt in ("csv", "json"):
            pages[f"{name}.{fmt}"] = client.get(f"/history/export/{name}.{fmt}")
    for url, response in pages.items():
        assert response.status_code == 200, url
        body = b"".join(response.streaming_content) if response.streaming else response.content
        text = body.decode()
        for word in identifiers(catalogue):
            assert word not in text, (url, word)
        assert not shows_figure(text, "12.5") and not shows_figure(text, "0.75 s"), url
    shared_battle = client.get(url_of(ShareLink.objects.get(battle=battle))).content.decode()
    assert "Model A" in shared_battle and "Answer one." in shared_battle
    assert "Speeds are shown at the reveal." in shared_battle
    assert str(battle.id) not in json.dumps(read_json(client.get("/history/export/battles.json")))


def test_after_the_reveal_the_share_page_and_export_name_the_models(client, owner, catalogue):
    t = tournament(owner, catalogue)
    client.force_login(owner)
    share(client, t)
    link = ShareLink.objects.get(tournament=t)
    running = client.get(url_of(link)).content.decode()
    assert "Blind tournament" in running and "Contestant 1" in running
    play_through(t)
    revealed = client.__class__().get(url_of(link)).content.decode()
    assert "Tournament won by" in revealed and t.winner.name in revealed
    assert all(m.name in revealed for m in catalogue) and "An answer." in revealed
    exported = read_json(client.get("/history/export/battles.json", {"mode": "tournament"}))
    assert len(exported["rows"]) == 3 and all(r["tournament_id"] == str(t.id) for r in exported["rows"])
    assert {r["left"]["model"] for r in exported["rows"]} | {r["right"]["model"] for r in exported["rows"]} \
        == {m.slug for m in catalogue}


# --- share links ---------------------------------------------------------------------------
def test_the_owner_shares_a_generation_and_anyone_with_the_link_reads_it(client, owner, catalogue):
    gen = generation(owner, catalogue[0], "What is <b>bold</b>?", system_prompt="Be brief.",
                     text="<script>alert(1)</script> Bold is heavy.")
    client.force_login(owner)
    page = client.get(gen.get_absolute_url()).content.decode()
    assert "Share read-only link" in page and reverse("share-create", args=["generation", gen.id]) in page

    response = share(client, gen)
    assert response.status_code == 302 and response["Location"] == gen.get_absolute_url() + "#share"
    link = ShareLink.objects.get(generation=gen)
    assert len(token_of(link)) >= 32 and link.owner == owner and link.active
    page = client.get(gen.get_absolute_url()).content.decode()
    assert f"http://testserver{url_of(link)}" in page and "Revoke link" in page
    # Shown once: only a digest is stored, so later the page says a link exists, by its first characters.
    page = client.get(gen.get_absolute_url()).content.decode()
    assert token_of(link) not in page and f"/s/{link.hint}…" in page and "Revoke link" in page
    assert share(client, gen).status_code == 302 and ShareLink.objects.count() == 1  # the same link again

    anonymous = client.__class__()
    shared = anonymous.get(url_of(link))
    html = shared.content.decode()
    assert shared.status_code == 200
    assert shared["Referrer-Policy"] == "no-referrer" and "noindex" in shared["X-Robots-Tag"]
    assert '<meta name="robots" content="noindex' in html and "no-store" in shared["Cache-Control"]
    assert "SmolLM2 135M Instruct" in html and "Be brief." in html and "Bold is heavy." in html
    assert "&lt;script&gt;" in html and "<script>alert" not in html and "<b>bold" not in html
    assert "12.5" in html and "0.75 s" in html  # metrics
    assert "<form" not in html and "ws-connect" not in html and "csrfmiddlewaretoken" not in html
    view_counts.flush()  # views are counted in Redis; the orchestrator's loop adds them up
    link.refresh_from_db()
    assert link.views == 1 and link.last_viewed_at is not None


def test_a_shared_comparison_is_read_only(client, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[3])
    vote(battle, "right")
    client.force_login(owner)
    share(client, battle)
    link = ShareLink.objects.get(battle=battle)
    html = client.__class__().get(url_of(link)).content.decode()
    assert "Blue." in html and "Red." in html and "Gemma 3 270M (base)" in html
    assert "Verdict: Gemma 3 270M (base) is better." in html and "Right is better" not in html  # names the winner
    for action in ("vote", "rerun", "swap", "continue", "stop"):
        assert f"/{action}" not in html
    assert "<form" not in html and "<button" not in html


def test_a_running_battle_is_shared_as_stored_and_says_so(client, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[3], texts=None)
    client.force_login(owner)
    share(client, battle)
    html = client.__class__().get(url_of(ShareLink.objects.get())).content.decode()
    assert "Still running" in html and "ws-connect" not in html and "<form" not in html


def test_only_the_owner_can_share_or_revoke(client, owner, outsider, catalogue):
    gen = generation(owner, catalogue[0], text="Blue.")
    battle = comparison(owner, catalogue[0], catalogue[3])
    t = tournament(owner, catalogue)
    client.force_login(outsider)
    for obj in (gen, battle, t):
        assert share(client, obj).status_code == 404
    assert not ShareLink.objects.exists()
    assert "Share read-only link" not in client.get(gen.get_absolute_url()).content.decode()

    client.force_login(owner)
    share(client, battle)
    link = ShareLink.objects.get()
    client.force_login(outsider)
    assert client.post(reverse("share-revoke", args=[link.id])).status_code == 404
    link.refresh_from_db()
    assert link.active

    anonymous = client.__class__()
    response = anonymous.post(reverse("share-revoke", args=[link.id]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    assert anonymous.post(reverse("share-create", args=["generation", gen.id])).status_code == 302
    link.refresh_from_db()
    assert link.active and ShareLink.objects.count() == 1
    # CSRF: a cross-site form post without the token changes nothing.
    csrf_client = client.__class__(enforce_csrf_checks=True)
    csrf_client.force_login(owner)
    assert csrf_client.post(reverse("share-revoke", args=[link.id])).status_code == 403
    assert csrf_client.post(reverse("share-create", args=["generation", gen.id])).status_code == 403
    link.refresh_from_db()
    assert link.active and ShareLink.objects.count() == 1
    assert client.get(reverse("share-create", args=["generation", gen.id])).status_code in (302, 405)


def test_revoked_and_unknown_links_get_the_same_404_and_revoked_stays_revoked(client, owner, catalogue):
    gen = generation(owner, catalogue[0], text="Blue.")
    client.force_login(owner)
    share(client, gen)
    link = ShareLink.objects.get()
    response = client.post(reverse("share-revoke", args=[link.id]), {"next": "/history/shared/"})
    assert response.status_code == 302 and response["Location"] == "/history/shared/"
    link.refresh_from_db()
    assert not link.active

    anonymous = client.__class__()
    revoked = anonymous.get(url_of(link))
    unknown = anonymous.get(f"/s/{'x' * len(token_of(link))}/")
    assert revoked.status_code == unknown.status_code == 404
    assert revoked.content == unknown.content
    assert "Blue." not in revoked.content.decode()

    # Revoking again changes nothing; sharing again makes a new link, the old one stays dead.
    first_revoked_at = link.revoked_at
    client.post(reverse("share-revoke", args=[link.id]))
    link.refresh_from_db()
    assert link.revoked_at == first_revoked_at
    share(client, gen)
    new = ShareLink.objects.active().get()
    assert token_of(new) != token_of(link)
    assert anonymous.get(url_of(new)).status_code == 200
    assert anonymous.get(url_of(link)).status_code == 404
    assert "Share read-only link" not in client.get(gen.get_absolute_url()).content.decode()  # it shows the new one


def test_tokens_are_long_and_distinct(owner, catalogue):
    gens = [generation(owner, catalogue[0], text="x") for _ in range(20)]
    tokens = [ShareLink.share(owner, g).token for g in gens]
    assert len(set(tokens)) == 20
    assert all(len(t) >= 32 and re.fullmatch(r"[A-Za-z0-9_-]+", t) for t in tokens)


def test_the_shared_links_list_shows_and_revokes(client, owner, outsider, catalogue):
    gen = generation(owner, catalogue[0], "My shared prompt", text="x")
    other = generation(outsider, catalogue[0], "Their shared prompt", text="y")
    ShareLink.share(outsider, other)
    client.force_login(owner)
    share(client, gen)
    link = ShareLink.objects.get(owner=owner)
    html = client.get("/history/shared/").content.decode()
    assert "My shared prompt" in html and f"/s/{link.hint}…" in html and "Their shared prompt" not in html
    assert token_of(link) not in html  # only a digest is stored: the list names a link by its first characters
    assert ">generation</a>" in html
    assert reverse("share-revoke", args=[link.id]) in html
    client.post(reverse("share-revoke", args=[link.id]), {"next": "/history/shared/"})
    html = client.get("/history/shared/").content.decode()
    assert 'data-state="revoked"' in html and f"/s/{link.hint}…" not in html


def test_the_share_control_is_on_every_permalink_page(client, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[3])
    t = tournament(owner, catalogue)
    client.force_login(owner)
    for obj, kind in ((battle, "battle"), (t, "tournament")):
        html = client.get(obj.get_absolute_url()).content.decode()
        assert reverse("share-create", args=[kind, obj.id]) in html
    share(client, battle)
    assert "can read this comparison" in client.get(battle.get_absolute_url()).content.decode()
    assert "neutral labels until the reveal" in client.get(t.get_absolute_url()).content.decode()


# --- exports -------------------------------------------------------------------------------
def test_battle_export_as_csv_has_every_column_and_only_the_owners_rows(client, owner, outsider, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[3], "Pick =1+1", texts=("=HYPERLINK(\"http://x\")", "-2+3"))
    vote(battle, "left")
    comparison(outsider, catalogue[0], catalogue[3], "Not mine")
    client.force_login(owner)
    response = client.get("/history/export/battles.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    today = timezone.localdate().isoformat()
    assert response["Content-Disposition"] == f'attachment; filename="llm-arena-battles-{today}.csv"'
    rows = read_csv(response)
    assert len(rows) == 1
    row = rows[0]
    assert list(row) == export.COLUMNS["battles"]
    assert row["id"] == str(battle.id) and row["mode"] == "comparison" and row["blind"] == "false"
    assert (row["left_model"], row["right_model"]) == ("smollm2-135m", "gemma-3-270m")
    assert row["outcome"] == "left" and row["winner_model"] == "smollm2-135m" and row["voted_at"]
    assert row["left_tokens_per_s"] == "12.5" and row["right_generated_tokens"] == "3"
    assert float(row["left_time_to_first_token_s"]) == pytest.approx(0.75, abs=0.01)
    assert row["left_finish_reason"] == "stop"
    assert row["permalink"] == f"http://testserver{battle.get_absolute_url()}"
    assert json.loads(row["left_params"]) == PARAMS
    # Formula injection: cells a spreadsheet would run are neutralised.
    assert row["prompt"] == "Pick =1+1"  # only a leading = counts
    assert row["left_text"] == "'=HYPERLINK(\"http://x\")" and row["right_text"] == "'-2+3"


@pytest.mark.parametrize("value,cell", [
    ("=cmd|' /C calc'!A0", "'=cmd|' /C calc'!A0"), ("+1", "'+1"), ("-1", "'-1"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\tx", "'\tx"), ("\rx", "'\rx"), ("plain = text", "plain = text"), ("", ""), (None, ""), (2.5, 2.5),
    ({"a": "=x"}, '{"a": "=x"}'), (True, "true"),
])
def test_csv_cells_neutralise_formulas(value, cell):
    assert csv_cell(value) == cell


def test_generation_export_as_json_and_csv_honours_the_search(client, owner, outsider, catalogue):
    wanted = generation(owner, catalogue[0], "Translate cheese", system_prompt="@system", text="+fromage", ago=5)
    generation(owner, catalogue[0], "Something else", text="x")
    generation(outsider, catalogue[0], "Translate cheese", text="y")
    comparison(owner, catalogue[0], catalogue[3], "Translate cheese")  # its sides are in the battles export
    client.force_login(owner)
    response = client.get("/history/export/generations.json", {"q": "cheese"})
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response["Content-Disposition"].startswith('attachment; filename="llm-arena-generations-')
    body = read_json(response)
    assert body["dataset"] == "generations" and body["filters"] == {"q": "cheese"}
    assert [r["id"] for r in body["rows"]] == [str(wanted.id)]
    row = body["rows"][0]
    assert row["text"] == "+fromage" and row["system_prompt"] == "@system"  # JSON is not escaped
    assert row["model"] == "smollm2-135m" and row["params"] == PARAMS and row["generated_tokens"] == 3
    assert row["permalink"] == f"http://testserver{wanted.get_absolute_url()}"

    rows = read_csv(client.get("/history/export/generations.csv", {"q": "cheese"}))
    assert [r["id"] for r in rows] == [str(wanted.id)] and list(rows[0]) == export.COLUMNS["generations"]
    assert rows[0]["text"] == "'+fromage" and rows[0]["system_prompt"] == "'@system"
    assert rows[0]["status"] == "done" and rows[0]["tokens_per_s"] == "12.5"


def test_an_empty_export_is_still_valid(client, owner):
    client.force_login(owner)
    assert read_json(client.get("/history/export/battles.json"))["rows"] == []
    assert read_csv(client.get("/history/export/generations.csv")) == []


def test_the_history_page_links_its_exports_with_the_search(client, owner, catalogue):
    generation(owner, catalogue[0], "x", text="x")
    client.force_login(owner)
    html = client.get("/history/", {"q": "cheese"}).content.decode()
    assert "/history/export/generations.csv?q=cheese" in html and "/history/export/generations.json?q=cheese" in html
    html = client.get("/history/comparisons/").content.decode()
    assert "/history/export/battles.csv" in html


def test_api_export_with_a_token(client, owner, outsider, token, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[3], "API prompt")
    comparison(outsider, catalogue[0], catalogue[3], "API prompt")
    gen = generation(owner, catalogue[0], "API gen", text="x")
    response = api(client, "get", "/api/v1/export/battles", token)
    assert response.status_code == 200
    assert [r["id"] for r in read_json(response)["rows"]] == [str(battle.id)]
    rows = read_csv(api(client, "get", "/api/v1/export/generations?format=csv", token))
    assert [r["id"] for r in rows] == [str(gen.id)]
    assert read_json(api(client, "get", "/api/v1/export/generations?q=nothing", token))["rows"] == []
    bad = api(client, "get", "/api/v1/export/battles?format=xml", token)
    assert bad.status_code == 400 and "format" in bad.json()["error"]["fields"]
    for path in ("/api/v1/export/battles", "/api/v1/export/generations"):
        assert api(client, "get", path).status_code == 401
        assert api(client, "get", path, "not-a-token").status_code == 401
    spec = client.get("/api/v1/openapi.json").json()
    assert {"/api/v1/export/battles", "/api/v1/export/generations"} <= set(spec["paths"])


@pytest.mark.django_db(transaction=True)
async def test_under_asgi_the_export_streams_through_an_async_iterator(async_client, owner, catalogue):
    """uvicorn serves ASGI: a synchronous iterator would be read whole before sending."""
    from asgiref.sync import sync_to_async

    gens = await sync_to_async(lambda: [generation(owner, catalogue[0], f"p{i}", text=f"t{i}", ago=i)
                                        for i in range(5)])()
    await async_client.aforce_login(owner)
    response = await async_client.get("/history/export/generations.csv")
    assert response.status_code == 200 and response.is_async
    body = b"".join([chunk async for chunk in response.streaming_content]).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [r["id"] for r in rows] == [str(g.id) for g in gens]
