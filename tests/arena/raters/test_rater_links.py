"""Rater links on a people-judged suite run: made, used and revoked through the pages; each
link's queue (both ways round across raters, no repeats, the cap), expiry on an injected clock,
revocation (410), verdicts attributed to the link's name, names never on the rater's pages,
another user's links a 404, the agreement shown on the owner's run page."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from arena.battles.models import Battle
from arena.history.models import digest
from arena.raters import actions, views
from arena.raters.models import RaterLink
from arena.suite_runs.actions import start_run
from arena.suite_runs.models import RaterVerdict, SuiteRun
from tests.arena.factories import identifiers, suite
from tests.arena.suite_runs.running import run_to_end

pytestmark = pytest.mark.django_db
NOW = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    now = {"t": NOW}
    monkeypatch.setattr(views, "CLOCK", lambda: now["t"])
    return now


def people_run(owner, models, prompts=("Capital of France?", "Capital of Peru?")) -> SuiteRun:
    run = start_run(owner, suite=suite(owner, *prompts, tag="geo"), contestants=models)
    run_to_end(run, answer="Paris")
    run.refresh_from_db()
    return run


def make(mine, run, name="Support lead", cap=50, days=7) -> str:
    """Make a link through the run page's form; the full URL the page shows once."""
    expires = (NOW + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M")
    response = mine.post(f"/suite-runs/{run.id}/raters/new", {"name": name, "expires_at": expires, "cap": cap})
    assert response.status_code == 302, response.content.decode()[:2000]
    html = mine.get(f"/suite-runs/{run.id}/").content.decode()
    url = re.search(r'value="(http://testserver/rate/[^"]+/)"', html).group(1)
    assert url not in mine.get(f"/suite-runs/{run.id}/").content.decode()  # shown once
    return url.removeprefix("http://testserver")


def shown(html: str) -> tuple[str, str, str]:
    token = re.search(r'name="token" value="([^"]+)"', html).group(1)
    a, b = (re.sub(r"</?p>", "", text).strip()
            for text in re.findall(r'<div class="output markdown answer-text">(.*?)</div>', html, re.S))
    return token, a, b


def judge(client, url, choice="a", n=1) -> list[tuple[str, str, str]]:
    """Judge `n` pairs; the (prompt, A text, B text) shown each time."""
    seen = []
    for _ in range(n):
        html = client.get(url).content.decode()
        token, a, b = shown(html)
        prompt = re.search(r'<p class="turn turn-user">(.*?)</p>', html).group(1)
        seen.append((prompt, a, b))
        response = client.post(url, {"token": token, "choice": choice})
        assert response.status_code == 302, response.content.decode()[:1500]
    return seen


def test_only_a_digest_is_stored_and_the_page_is_private(mine, owner, catalogue, client_factory):
    run = people_run(owner, catalogue[:2])
    url = make(mine, run)
    token = url.split("/")[2]
    link = RaterLink.objects.get()
    assert len(token) >= 43 and link.digest == digest(token) and token not in link.digest
    response = client_factory().get(url)
    assert response.status_code == 200
    assert response["Referrer-Policy"] == "same-origin" and "noindex" in response["X-Robots-Tag"]
    assert 'name="robots" content="noindex' in response.content.decode()
    assert client_factory().get("/rate/" + "x" * 43 + "/").status_code == 404


def test_each_rater_judges_each_pair_once_and_two_raters_see_it_both_ways(mine, owner, catalogue, client_factory):
    run = people_run(owner, catalogue[:3])  # 3 pairs x 2 prompts
    first, second = make(mine, run, "Alice"), make(mine, run, "Bob")
    one, two = client_factory(), client_factory()
    seen_one, seen_two = judge(one, first, n=6), judge(two, second, n=6)
    # no repeats: six different pairs each, the same six
    assert len(set(seen_one)) == 6
    assert {(p, frozenset((a, b))) for p, a, b in seen_one} == {(p, frozenset((a, b))) for p, a, b in seen_two}
    # each pair both ways round across the two raters
    assert all((p, b, a) in seen_two for p, a, b in seen_one)
    html = one.get(first).content.decode()
    assert "Thank you" in html and 'name="token"' not in html
    verdicts = RaterVerdict.objects.select_related("battle")
    assert sorted(v.rater_name for v in verdicts).count("Alice") == 6
    assert all(v.battle.owner == owner and v.battle.blind and v.battle.judge_id is None for v in verdicts)
    # Both voted "A" on every pair, shown opposite ways round: they disagree on every pair.
    outcomes = {(v.battle.left_id, v.battle.right_id, v.rater_name): v.battle.outcome for v in verdicts}
    assert all(outcomes[(left, right, "Alice")] != outcomes[(left, right, "Bob")] for left, right, _ in outcomes)
    # the owner's own blind queue is untouched by the raters' verdicts
    assert run.people_verdicts(owner).count() == 0 and run.next_pair_for(owner) is not None
    # done: the verdicts count (revealed), the run page shows the counts and a kappa
    assert not Battle.objects.filter(rater_verdict__isnull=False, revealed=False).exists()
    page = mine.get(f"/suite-runs/{run.id}/").content.decode()
    assert "Alice" in page and "6 of at most 50" in page and "Cohen" in page


def test_the_cap_stops_a_rater(mine, owner, catalogue, client_factory):
    run = people_run(owner, catalogue[:3])
    url = make(mine, run, cap=2)
    rater = client_factory()
    judge(rater, url, n=2)
    html = rater.get(url).content.decode()
    assert "the 2 verdicts this link allows" in html and 'name="token"' not in html
    assert RaterVerdict.objects.count() == 2


def test_expiry_on_the_clock_and_revocation_answer_410(mine, owner, catalogue, client_factory, clock):
    run = people_run(owner, catalogue[:3])
    soon, later = make(mine, run, "Soon", days=1), make(mine, run, "Later")
    rater = client_factory()
    token, _a, _b = shown(rater.get(soon).content.decode())
    clock["t"] = NOW + timedelta(days=1, minutes=1)
    response = rater.post(soon, {"token": token, "choice": "a"})
    assert response.status_code == 410 and "expired" in response.content.decode()
    assert rater.get(soon).status_code == 410 and not RaterVerdict.objects.exists()
    judge(rater, later, n=1)
    link = RaterLink.objects.get(name="Later")
    assert mine.post(f"/suite-runs/{run.id}/raters/{link.id}/revoke").status_code == 302
    response = rater.get(later)
    assert response.status_code == 410 and "revoked" in response.content.decode()
    assert Battle.objects.get(rater_verdict__rater=link).revealed  # ended: its verdict counts


def test_another_user_cannot_see_make_or_revoke_links(mine, owner, outsider, catalogue, client_factory):
    run = people_run(owner, catalogue[:2])
    make(mine, run)
    link = RaterLink.objects.get()
    theirs = client_factory()
    theirs.force_login(outsider)
    expires = (NOW + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    assert theirs.post(f"/suite-runs/{run.id}/raters/new", {"name": "x", "expires_at": expires,
                                                            "cap": 5}).status_code == 404
    assert theirs.post(f"/suite-runs/{run.id}/raters/{link.id}/revoke").status_code == 404
    other_run = people_run(outsider, catalogue[:2])
    assert mine.post(f"/suite-runs/{other_run.id}/raters/{link.id}/revoke").status_code == 404
    link.refresh_from_db()
    assert link.revoked_at is None and RaterLink.objects.count() == 1


def test_names_never_reach_the_raters_pages(mine, owner, catalogue, client_factory):
    run = people_run(owner, catalogue[:2], prompts=("One?",))
    url = make(mine, run, cap=5)
    rater = client_factory()
    pages = [rater.get(url).content.decode()]
    judge(rater, url, n=1)
    pages.append(rater.get(url).content.decode())  # done: nothing left
    for html in pages:
        page = re.sub(r'<div class="output markdown answer-text">.*?</div>', "", html, flags=re.S)
        for word in identifiers(catalogue):
            assert word not in page, word


def test_bad_input_is_refused(mine, owner, catalogue, client_factory, judge_run=None):
    run = people_run(owner, catalogue[:2])
    past = (NOW - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M")
    for data in ({"name": "", "expires_at": past, "cap": 5}, {"name": "A", "expires_at": past, "cap": 5},
                 {"name": "A" * 500, "expires_at": past, "cap": 5}, {"name": "A", "expires_at": "x", "cap": 0}):
        assert mine.post(f"/suite-runs/{run.id}/raters/new", data).status_code == 400
    assert not RaterLink.objects.exists()
    url = make(mine, run)
    rater = client_factory()
    for data in ({"token": "forged", "choice": "a"}, {"token": "", "choice": "zzz"}):
        assert rater.post(url, data).status_code == 409
    # a token for the other way round than this link's queue shows the pair is refused
    token, _a, _b = shown(rater.get(url).content.decode())
    from django.core import signing

    from arena.suite_runs.forms import SALT

    shown_pair = signing.loads(token, salt=SALT)
    flipped = signing.dumps({**shown_pair, "a": "right" if shown_pair["a"] == "left" else "left"}, salt=SALT)
    assert rater.post(url, {"token": flipped, "choice": "a"}).status_code == 400
    assert not RaterVerdict.objects.exists()


def test_a_run_with_a_model_judge_takes_no_link(owner, catalogue):
    run = people_run(owner, catalogue[:2])
    SuiteRun.objects.filter(id=run.id).update(judge=catalogue[2])
    run.refresh_from_db()
    with pytest.raises(actions.RaterError):
        actions.create_link(run, name="x", expires_at=NOW + timedelta(days=1), cap=3, now=NOW)


def test_verdict_posts_are_rate_limited(mine, owner, catalogue, client_factory, monkeypatch):
    monkeypatch.setattr(actions, "RATE_PER_MINUTE", 2)
    run = people_run(owner, catalogue[:3])
    url = make(mine, run)
    rater = client_factory()
    judge(rater, url, n=2)
    token, _a, _b = shown(rater.get(url).content.decode())
    assert rater.post(url, {"token": token, "choice": "a"}).status_code == 429
    assert RaterVerdict.objects.count() == 2


def test_the_raters_form_needs_its_csrf_token(mine, owner, catalogue, client_factory):
    run = people_run(owner, catalogue[:2])
    url = make(mine, run)
    rater = client_factory(enforce_csrf_checks=True)
    html = rater.get(url).content.decode()
    token, _a, _b = shown(html)
    assert rater.post(url, {"token": token, "choice": "a"}).status_code == 403
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    assert rater.post(url, {"token": token, "choice": "a", "csrfmiddlewaretoken": csrf}).status_code == 302


def test_the_api_and_the_runs_export_carry_the_raters_and_their_ended_links_verdicts(
        mine, owner, outsider, catalogue, client_factory, client, token):
    from arena.accounts.models import ApiToken
    from tests.arena.api_client import api

    run = people_run(owner, catalogue[:3])  # 3 pairs x 2 prompts
    first, second, third = make(mine, run, "Alice"), make(mine, run, "Bob"), make(mine, run, "Carol")
    judge(client_factory(), first, n=6)
    judge(client_factory(), second, n=6)  # both done: their verdicts are revealed
    judge(client_factory(), third, n=1)  # Carol judges on: hers stays blind
    link_tokens = {url.split("/")[2] for url in (first, second, third)}

    body = api(client, "get", f"/api/v1/suite-runs/{run.id}/raters", token).json()
    assert [(link["name"], link["verdicts"], link["cap"], link["state"]) for link in body["links"]] == [
        ("Alice", 6, 50, "done"), ("Bob", 6, 50, "done"), ("Carol", 1, 50, "active")]
    agreement = body["agreement"]
    assert (agreement["method"], agreement["raters"], agreement["shared_pairs"]) == ("fleiss", 3, 6)
    assert agreement["kappa"] is not None and agreement["kappa"] < 0  # A each time, shown opposite ways round
    raw = api(client, "get", f"/api/v1/suite-runs/{run.id}/raters", token).content.decode()
    assert not any(t in raw or t[:8] in raw for t in link_tokens)  # neither a token nor its hint
    assert api(client, "get", f"/api/v1/suite-runs/{run.id}/raters", ApiToken.issue(outsider)).status_code == 404

    document = json.loads(b"".join(mine.get(f"/suite-runs/{run.id}/export.json").streaming_content))
    raters = [v for v in document["verdicts"] if v["rater_name"]]
    assert sorted(v["rater_name"] for v in raters) == ["Alice"] * 6 + ["Bob"] * 6  # not Carol's, still blind
    assert all(v["winner_model"] in {m.slug for m in catalogue[:3]} for v in raters)
