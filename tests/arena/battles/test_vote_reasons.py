"""Reasons with votes (issue 38, item 3): a person's verdict may carry reason tags from the staff's
list and a short comment. Stored by every vote path (comparison page and API, anonymous battle page
and API, tournament winner page and API, a suite run's blind pair), refused when unknown or too
long, shown with the verdict only where the names are (a blind item's after its reveal), escaped,
in History and the exports, and counted per contestant on the leaderboard."""

from __future__ import annotations

import csv
import io
import json
import random
import re

import pytest
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from arena.battles import actions
from arena.battles.models import ArenaExclusion, Battle, ReasonTag
from arena.battles.voting import COMMENT_MAX, DEFAULT_REASONS, Note, NoteError, clean_note
from arena.catalogue.models import ModelEntry
from arena.leaderboard import why
from arena.suite_runs.actions import reveal_for, start_run
from arena.tournaments.actions import start_tournament
from arena.tournaments.models import Tournament
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import BLIND_PARAMS, comparison, finish_battle, play_through, reason_tags, suite
from tests.arena.suite_runs.running import run_to_end

pytestmark = pytest.mark.django_db
SLUGS = [slug for slug, _label in DEFAULT_REASONS]
# A hostile comment: markup that must arrive as text, and a formula a spreadsheet must not run.
HOSTILE = '<script>alert("rsn-7f3e")</script><img src=x onerror=alert(1)>'
FORMULA = '=HYPERLINK("http://evil.example/rsn-9c1d","click")'


@pytest.fixture(autouse=True)
def reasons(db):
    return reason_tags()


# --- the pure check -------------------------------------------------------------------------
@given(st.lists(st.sampled_from(SLUGS), max_size=20))
def test_known_reasons_come_back_once_each_in_the_lists_order(given_reasons):
    note = clean_note(None, given_reasons, SLUGS)
    assert list(note.reasons) == [s for s in SLUGS if s in given_reasons]


@given(st.text(max_size=COMMENT_MAX * 2).filter(lambda t: "\x00" not in t))
def test_a_comment_is_kept_up_to_its_limit_and_refused_past_it(text):
    cleaned = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    if len(cleaned) <= COMMENT_MAX:
        assert clean_note(text, [], SLUGS).comment == cleaned
    else:
        with pytest.raises(NoteError) as exc:
            clean_note(text, [], SLUGS)
        assert exc.value.field == "comment" and exc.value.code == "invalid_request"


def test_a_browsers_line_ends_count_as_one_character():
    assert len(clean_note("a\r\n" * 250, [], SLUGS).comment) == 499  # 750 characters sent, 499 kept


@pytest.mark.parametrize("bad, field, code", [
    (("", ["made_up"]), "reasons", "unknown_reason"),
    (("", "too_long"), "reasons", "invalid_request"),  # a string, not a list
    (("", [1]), "reasons", "invalid_request"),
    ((5, []), "comment", "invalid_request"),
    (("nul\x00", []), "comment", "invalid_request"),
    (("x" * (COMMENT_MAX + 1), []), "comment", "invalid_request"),
])
def test_a_bad_note_is_refused_with_its_field_and_code(bad, field, code):
    with pytest.raises(NoteError) as exc:
        clean_note(*bad, SLUGS)
    assert (exc.value.field, exc.value.code) == (field, code)


def test_a_retired_reason_is_no_longer_offered_but_keeps_its_label():
    ReasonTag.objects.filter(slug="unsafe").update(active=False)
    assert "unsafe" not in dict(ReasonTag.offered()) and ReasonTag.labels()["unsafe"] == "unsafe"


# --- a comparison: the page and the API -------------------------------------------------------
def test_a_comparison_vote_stores_its_reasons_and_comment_and_shows_them_escaped(client, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1])
    client.force_login(owner)
    page = client.get(battle.get_absolute_url()).content.decode()
    assert 'name="reasons" value="too_long"' in page and 'name="comment"' in page  # the form offers them
    response = client.post(reverse("battle-vote", args=[battle.id]),
                           {"outcome": "left", "reasons": ["clearer", "too_long"], "comment": HOSTILE})
    assert response.status_code == 302
    battle.refresh_from_db()
    assert battle.reasons == ["too_long", "clearer"] and battle.comment == HOSTILE  # the list's order
    page = client.get(battle.get_absolute_url()).content.decode()
    assert "<script>alert(\"rsn-7f3e\")" not in page and "&lt;script&gt;alert(&quot;rsn-7f3e&quot;)" in page
    assert 'data-reason="too_long">too long</span>' in page
    # A later vote replaces the note with its own (the form was filled with the stored one).
    assert 'value="clearer" checked' in page or re.search(r'value="clearer"[^>]*checked', page)
    client.post(reverse("battle-vote", args=[battle.id]), {"outcome": "tie"})
    battle.refresh_from_db()
    assert battle.outcome == "tie" and battle.reasons == [] and battle.comment == ""


def test_a_comparison_vote_with_a_bad_note_stores_nothing(client, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1])
    client.force_login(owner)
    too_long = client.post(reverse("battle-vote", args=[battle.id]), {"outcome": "left", "comment": "y" * 501})
    unknown = client.post(reverse("battle-vote", args=[battle.id]), {"outcome": "left", "reasons": ["made_up"]})
    assert too_long.status_code == unknown.status_code == 400
    assert "at most 500" in too_long.content.decode() and "y" * 501 in too_long.content.decode()  # kept to edit
    battle.refresh_from_db()
    assert battle.outcome == "" and battle.reasons == [] and battle.comment == ""


def test_the_api_takes_reasons_and_a_comment_and_refuses_unknown_or_too_long(client, token, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1])
    path = f"/api/v1/comparisons/{battle.id}/vote"
    unknown = api(client, "post", path, token, {"outcome": "left", "reasons": ["too_long", "rsn-nope"]})
    assert unknown.status_code == 400 and unknown.json()["error"]["code"] == "unknown_reason"
    assert "rsn-nope" in unknown.json()["error"]["message"] and "reasons" in unknown.json()["error"]["fields"]
    too_long = api(client, "post", path, token, {"outcome": "left", "comment": "z" * 501})
    assert too_long.status_code == 400 and too_long.json()["error"]["code"] == "invalid_request"
    assert "comment" in too_long.json()["error"]["fields"]
    not_a_list = api(client, "post", path, token, {"outcome": "left", "reasons": "too_long"})
    assert not_a_list.status_code == 400
    huge = api(client, "post", path, token, {"outcome": "left", "reasons": ["q" * 5000] * 200})
    assert huge.status_code == 400 and len(huge.json()["error"]["message"]) < 400  # the echo is cut
    battle.refresh_from_db()
    assert battle.outcome == ""
    ok = api(client, "post", path, token, {"outcome": "right", "reasons": ["factual_error"], "comment": HOSTILE})
    assert ok.status_code == 200
    body = ok.json()
    assert body["reasons"] == ["factual_error"] and body["comment"] == HOSTILE
    assert_conforms(body, "/api/v1/comparisons/{id}/vote", "post")
    battle.refresh_from_db()
    assert battle.reasons == ["factual_error"] and battle.comment == HOSTILE


def test_another_users_battle_is_a_404_whatever_the_note(client, outsider, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1])
    client.force_login(outsider)
    assert client.post(reverse("battle-vote", args=[battle.id]),
                       {"outcome": "left", "reasons": ["clearer"]}).status_code == 404
    battle.refresh_from_db()
    assert battle.outcome == "" and battle.reasons == []


# --- an anonymous battle -------------------------------------------------------------------
@pytest.fixture
def pair(catalogue):
    keep = ("smollm2-135m-llamacpp", "gemma-3-270m-llamacpp")
    for m in catalogue:
        if m.slug not in keep:
            ArenaExclusion.objects.create(model=m, reason="tests")
    ModelEntry.objects.filter(slug__in=keep, base=True).update(in_chat_draws=True)


def test_an_anonymous_vote_stores_its_note_shown_with_the_names(client, owner, pair):
    battle = finish_battle(actions.start_anonymous(owner, prompt="Hi", rng=random.Random(3)))
    client.force_login(owner)
    page = client.get(battle.get_absolute_url()).content.decode()
    assert 'name="reasons" value="off_topic"' in page
    response = client.post(reverse("arena-vote", args=[battle.id]),
                           {"outcome": "both_bad", "reasons": ["off_topic"], "comment": "rsn-anon-41 both rambled"})
    assert response.status_code == 302
    battle.refresh_from_db()
    assert battle.revealed and battle.reasons == ["off_topic"] and battle.comment == "rsn-anon-41 both rambled"
    page = client.get(battle.get_absolute_url()).content.decode()
    assert "rsn-anon-41 both rambled" in page and battle.left.model.name in page


def test_the_anonymous_api_vote_takes_a_note(client, token, owner, pair):
    battle = finish_battle(actions.start_anonymous(owner, prompt="Hi", rng=random.Random(3)))
    path = f"/api/v1/arena/{battle.id}/vote"
    assert api(client, "post", path, token, {"outcome": "left", "reasons": ["nope"]}).status_code == 400
    battle.refresh_from_db()
    assert not battle.revealed  # a refused note reveals nothing
    body = api(client, "post", path, token, {"outcome": "left", "reasons": ["clearer"], "comment": "rsn-api-77"}).json()
    assert body["reasons"] == ["clearer"] and body["comment"] == "rsn-api-77" and body["left"]["model"]
    assert_conforms(body, "/api/v1/arena/{id}/vote", "post")


# --- a tournament: the note is blind until the reveal --------------------------------------------
def test_a_tournament_verdicts_note_shows_only_after_the_reveal(client, token, owner, catalogue):
    t = start_tournament(owner, contestants=catalogue[:4], prompt="Name a colour.", params=BLIND_PARAMS)
    client.force_login(owner)
    match = t.current_match()
    finish_battle(match.battle)
    page = client.get(t.get_absolute_url()).content.decode()
    assert 'name="reasons" value="better_reasoning"' in page
    response = client.post(reverse("tournament-winner", args=[t.id]), {
        "match": match.id, "battle": match.battle_id, "winner": "left",
        "reasons": ["better_reasoning"], "comment": "rsn-match-1 steadier"})
    assert response.status_code == 302
    battle = Battle.objects.get(id=match.battle_id)
    assert battle.reasons == ["better_reasoning"] and battle.comment == "rsn-match-1 steadier"
    # Before the reveal: on no page, in no JSON, in no export.
    assert "rsn-match-1" not in client.get(t.get_absolute_url()).content.decode()
    assert "rsn-match-1" not in client.get(battle.get_absolute_url()).content.decode()
    state = api(client, "get", f"/api/v1/tournaments/{t.id}", token).json()
    assert "rsn-match-1" not in json.dumps(state) and "better_reasoning" not in json.dumps(state)
    assert "rsn-match-1" not in b"".join(client.get("/history/export/battles.json").streaming_content).decode()
    # The second match through the API, with a note; a bad one refused first.
    second = Tournament.objects.get(id=t.id).current_match()
    finish_battle(second.battle)
    bad = api(client, "post", f"/api/v1/tournaments/{t.id}/winner", token,
              {"match": second.id, "winner": "right", "reasons": ["rsn-unknown"]})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "unknown_reason"
    assert Tournament.objects.get(id=t.id).current_match().id == second.id  # nothing decided
    ok = api(client, "post", f"/api/v1/tournaments/{t.id}/winner", token,
             {"match": second.id, "winner": "right", "reasons": ["too_short"], "comment": "rsn-match-2"})
    assert ok.status_code == 200 and "rsn-match-2" not in json.dumps(ok.json())
    t = play_through(Tournament.objects.get(id=t.id))
    assert t.revealed
    page = client.get(t.get_absolute_url()).content.decode()
    assert "rsn-match-1 steadier" in page and "rsn-match-2" in page and "better reasoning" in page
    state = api(client, "get", f"/api/v1/tournaments/{t.id}", token).json()
    noted = {m["battle"]["comment"]: m["battle"]["reasons"] for m in state["matches"] if m["battle"]}
    assert noted["rsn-match-1 steadier"] == ["better_reasoning"] and noted["rsn-match-2"] == ["too_short"]
    assert_conforms(state, "/api/v1/tournaments/{id}")


# --- a suite run's blind pair ------------------------------------------------------------------
def test_a_suite_runs_human_verdict_keeps_its_note_hidden_until_the_raters_reveal(client, owner, catalogue):
    run = start_run(owner, suite=suite(owner, "Capital of France?"), contestants=catalogue[:2])
    run_to_end(run, answer="Paris")
    client.force_login(owner)
    html = client.get(f"/suite-runs/{run.id}/judge").content.decode()
    assert 'name="reasons" value="factual_error"' in html
    token = re.search(r'name="token" value="([^"]+)"', html).group(1)
    long = client.post(f"/suite-runs/{run.id}/judge", {"token": token, "choice": "a", "comment": "w" * 501})
    assert long.status_code == 409 and not Battle.objects.filter(mode="suite", judge__isnull=True).exists()
    response = client.post(f"/suite-runs/{run.id}/judge",
                           {"token": token, "choice": "a", "reasons": ["factual_error"], "comment": HOSTILE})
    assert response.status_code == 302
    battle = Battle.objects.get(mode="suite", judge__isnull=True)
    assert battle.reasons == ["factual_error"] and battle.comment == HOSTILE and not battle.revealed
    reveal_for(run, owner)
    html = client.get(f"/suite-runs/{run.id}/judge").content.decode()
    assert "&lt;script&gt;alert(&quot;rsn-7f3e&quot;)" in html and '<script>alert("rsn-7f3e")' not in html


# --- History and the exports ------------------------------------------------------------------
def test_history_and_the_exports_carry_the_note(client, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[1])
    assert actions.vote(battle, "left", Note(FORMULA, ("too_long", "unsafe")))
    client.force_login(owner)
    listed = client.get("/history/comparisons/").content.decode()
    assert 'data-reason="unsafe">unsafe</span>' in listed
    rows = list(csv.DictReader(io.StringIO(
        b"".join(client.get("/history/export/battles.csv").streaming_content).decode())))
    assert rows[0]["reasons"] == '["too_long", "unsafe"]' and rows[0]["comment"] == "'" + FORMULA
    data = json.loads(b"".join(client.get("/history/export/battles.json").streaming_content))
    assert data["rows"][0]["reasons"] == ["too_long", "unsafe"] and data["rows"][0]["comment"] == FORMULA


# --- the leaderboard: why each contestant won and lost ---------------------------------------------
verdict_rows = st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from("abcd"),
                                  st.sampled_from(["left", "right", "tie", "both_bad"]),
                                  st.lists(st.sampled_from(SLUGS), max_size=3)), max_size=30)


@given(verdict_rows)
def test_every_reason_counts_once_for_the_winner_and_once_for_the_loser(rows):
    counted = {w.model: w for w in why.count(rows)}
    for how_a, how_b in ((why.WON, why.LOST), (why.EVEN, why.EVEN)):
        a = sum(n for w in counted.values() for _slug, n in w.reasons[how_a])
        b = sum(n for w in counted.values() for _slug, n in w.reasons[how_b])
        assert a == b if how_a != why.EVEN else a % 2 == 0
    decisive = [r for r in rows if r[2] in ("left", "right") and r[3]]
    assert sum(w.verdicts[why.WON] for w in counted.values()) == len(decisive)
    assert all(w.total > 0 for w in counted.values())  # a contestant without a reason has no row


def test_the_leaderboard_counts_the_reasons_each_contestant_won_and_lost_by(client, owner, catalogue):
    a, b = catalogue[0], catalogue[1]
    for outcome, reasons in (("left", ("clearer",)), ("left", ("clearer", "too_long")), ("right", ("unsafe",)),
                             ("tie", ("off_topic",)), ("left", ())):
        battle = comparison(owner, a, b, texts=("ok", "ok"))
        assert actions.vote(battle, outcome, Note("", reasons))
    blind = comparison(owner, a, b, texts=("ok", "ok"), mode=Battle.Mode.TOURNAMENT, blind=True)
    assert actions.vote(blind, "right", Note("", ("factual_error",)))  # not revealed: not counted
    client.force_login(owner)
    page = client.get(reverse("leaderboard") + "?kind=all").content.decode()
    section = page[page.index('id="why"'):]
    row_a = re.search(rf'<tr data-why-model="{a.slug}">(.*?)</tr>', section, re.S).group(1)
    row_b = re.search(rf'<tr data-why-model="{b.slug}">(.*?)</tr>', section, re.S).group(1)
    cells_a = dict(re.findall(r'<td data-how="(\w+)">(.*?)</td>', row_a, re.S))
    cells_b = dict(re.findall(r'<td data-how="(\w+)">(.*?)</td>', row_b, re.S))
    assert "clearer <strong>2</strong>" in cells_a["won"] and "too long <strong>1</strong>" in cells_a["won"]
    assert "unsafe <strong>1</strong>" in cells_a["lost"] and "in 1 verdict with a reason" in cells_a["lost"]
    assert "clearer <strong>2</strong>" in cells_b["lost"] and "unsafe <strong>1</strong>" in cells_b["won"]
    assert "off topic <strong>1</strong>" in cells_a["even"] and "off topic <strong>1</strong>" in cells_b["even"]
    assert "factual error" not in section.split("</table>")[0]
