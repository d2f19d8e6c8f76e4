"""The leaderboard opens on every verdict the viewer may see, names and counts each kind, narrows to
one kind by a link, remembers the viewer's last choice (a link naming filters wins), groups
variants under their base model, and ends with a decision summary: on the page and in the API."""

import re

import pytest
from django.urls import reverse

from arena.battles.actions import vote
from arena.battles.models import Battle
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import comparison, leaderboard_order, verdict

pytestmark = pytest.mark.django_db


def anonymous(owner, left, right, outcome: str) -> Battle:
    """An anonymous battle (the app's pair), voted: its vote reveals it."""
    battle = comparison(owner, left, right, prompt="Hi", texts=("ok", "ok"), mode=Battle.Mode.ANONYMOUS, blind=True)
    assert vote(battle, outcome)
    return battle


@pytest.fixture
def team(owner, catalogue):
    """A team's six verdicts: three from comparisons, two from a revealed tournament, one from an
    anonymous battle (the issue's "1 of its 6 verdicts")."""
    smollm, spec, awq, gemma = catalogue[:4]
    for _ in range(3):
        verdict(owner, smollm, gemma, "left")
    verdict(owner, gemma, spec, "left", blind=True, revealed=True)
    verdict(owner, smollm, spec, "right", blind=True, revealed=True)
    anonymous(owner, awq, gemma, "left")
    return catalogue


def page(client, query: str = "") -> str:
    return client.get(reverse("leaderboard") + query).content.decode()


def source_line(html: str) -> str:
    found = re.search(r'<p class="source-line" id="source-line">(.*?)</p>', html, re.S)
    assert found, "the page names its sources"
    return " ".join(re.sub(r"<[^>]+>", "", found.group(1)).split())


def test_the_default_leaderboard_counts_every_kind_of_verdict(client, owner, team):
    client.force_login(owner)
    html = page(client)
    assert "from 6 verdicts" in html
    assert source_line(html).startswith(
        "6 verdicts: 3 from comparisons, 2 from tournaments, 1 from anonymous battles. Shown: every kind.")
    assert set(leaderboard_order(html)) == {"smollm2-135m", "smollm2-135m-spec", "smollm2-135m-awq", "gemma-3-270m"}


def test_the_api_counts_every_kind_by_default(client, token, team):
    response = api(client, "get", "/api/v1/leaderboard", token)
    assert response.status_code == 200
    body = response.json()
    assert_conforms(body, "/api/v1/leaderboard")
    assert body["verdicts"] == 6
    assert {k: v["count"] for k, v in body["sources"].items()} == {
        "comparison": 3, "tournament": 2, "anonymous": 1, "suite": 0, "judge": 0}
    assert {e["model"] for e in body["entries"]} == {"smollm2-135m", "smollm2-135m-spec", "smollm2-135m-awq",
                                                     "gemma-3-270m"}
    assert api(client, "get", "/api/v1/leaderboard?kind=anonymous", token).json()["verdicts"] == 1
    assert api(client, "get", "/api/v1/leaderboard").status_code == 401



@pytest.mark.parametrize("query", ["unreliable=AAA", "kind=peoples", "days=2", "mode=x", "group=all", "style=yes",
                                   "kind=comparison&kind=nonsense"])
def test_the_api_refuses_a_filter_value_it_does_not_take(client, token, team, query):
    response = api(client, "get", f"/api/v1/leaderboard?{query}", token)
    assert response.status_code == 400
    name = query.rsplit("&", 1)[-1].split("=")[0]
    assert "Unknown value" in response.json()["error"]["fields"][name]

def test_a_kind_alone_by_its_link_and_the_choice_is_remembered(client, owner, team):
    client.force_login(owner)
    link = re.search(r'<a href="([^"]+)" title="Show only these" data-kind="anonymous">', page(client)).group(1)
    only = page(client, link.replace("&amp;", "&"))
    assert "from 1 verdict;" in only and set(leaderboard_order(only)) == {"smollm2-135m-awq", "gemma-3-270m"}
    line = source_line(only)
    assert "3 from comparisons (not shown)" in line and "Shown: 1 of them (anonymous battles)." in line
    assert "from 1 verdict;" in page(client)  # no filter named: the last choice
    assert "from 6 verdicts" in page(client, "?kind=all")  # a link naming filters wins
    assert "from 6 verdicts" in page(client)  # and is remembered in turn
    assert "from 5 verdicts" in page(client, "?kind=comparison&kind=tournament")


def test_older_links_still_choose_whose_verdicts(client, owner, team):
    client.force_login(owner)
    assert "from 1 verdict;" in page(client, "?mode=anonymous")
    assert "from 6 verdicts" in page(client, "?source=human")
    assert "No verdicts yet for this filter" in page(client, "?source=judge")


def test_variants_grouped_under_their_base_model(client, owner, team):
    client.force_login(owner)
    html = page(client, "?group=family")
    families = re.findall(r'<tbody class="family" data-family="([^"]+)">(.*?)</tbody>', html, re.S)
    assert len(families) == 2
    members = {key: leaderboard_order(body) for key, body in families}
    smollm_family = next(key for key, slugs in members.items() if "smollm2-135m" in slugs)
    assert set(members[smollm_family]) == {"smollm2-135m", "smollm2-135m-spec", "smollm2-135m-awq"}
    body = dict(families)[smollm_family]
    assert '<span class="family-name">SmolLM2 135M</span>' in body and "3 variants; top-rated:" in body
    assert '<span class="variant-kind">AWQ 4-bit</span>' in body and '<span class="variant-kind">spec</span>' in body
    assert '<span class="variant-kind">full precision</span>' in body
    assert 'class="family"' not in page(client, "?kind=all")  # off unless asked


def test_the_page_and_api_end_with_a_decision_summary(client, owner, token, team):
    client.force_login(owner)
    html = page(client)
    assert html.index('id="decision"') > html.index('id="win-matrix"')
    # Six verdicts cannot separate four entries: no single best is named.
    assert "cannot be told apart from the best" in html and "is the best in this view" not in html
    decision = api(client, "get", "/api/v1/leaderboard", token).json()["decision"]
    assert decision["best"] is None and len(decision["contenders"]) >= 2
    assert decision["sentences"][0].startswith(f"{len(decision['contenders'])} entries cannot be told apart")
    assert any(c.startswith("2 of the 6 verdicts come from tournament matches") for c in decision["caveats"])


def test_an_unreliable_judge_is_left_out_by_default_and_named_in_the_caveats_when_counted(client, owner, token,
                                                                                          catalogue):
    """A judge answering "A" on every reading (always the answer shown first) is marked unreliable."""
    from arena.suite_runs.actions import start_run
    from tests.arena.factories import suite
    from tests.arena.suite_runs.running import run_to_end

    prompts = [f"Name the capital of country number {i}." for i in range(9)]
    run = start_run(owner, suite=suite(owner, *prompts), contestants=catalogue[:2], judge_model=catalogue[2])
    run_to_end(run, verdict="A")
    verdict(owner, catalogue[0], catalogue[1], "left")
    body = api(client, "get", "/api/v1/leaderboard", token).json()
    assert body["verdicts"] == 1 and body["unreliable_left_out"] == 9 and body["sources"]["judge"]["count"] == 0
    assert not any("marked unreliable" in c for c in body["decision"]["caveats"])
    counted = api(client, "get", "/api/v1/leaderboard?unreliable=include", token).json()
    assert counted["verdicts"] == 10 and counted["sources"]["judge"]["count"] == 9
    assert f"Verdicts of a judge marked unreliable are counted here: {catalogue[2].label}." in counted["decision"][
        "caveats"]


def test_a_speed_measured_only_beside_other_answers_is_a_caveat(client, owner, token, catalogue):
    """Two entries that cannot be told apart: one has an answer that ran alone on its worker, the
    other's answers all ran while other answers shared it (metrics.shared_with_max, H7's count)."""
    from arena.generations.models import Generation

    smollm, gemma = catalogue[0], catalogue[3]
    verdict(owner, smollm, gemma, "left")
    verdict(owner, smollm, gemma, "right")
    for model, rate, shared in ((smollm, 60.0, 0), (gemma, 20.0, 3), (gemma, 22.0, 1)):
        gen = Generation.objects.create(owner=owner, model=model, prompt="Hi", params={"max_new_tokens": 8})
        assert gen.finish(Generation.Status.DONE, text="Blue.", finish_reason="stop",
                          metrics={"generated_tokens": 8, "decode_tokens_per_s": rate, "shared_with_max": shared})
    decision = api(client, "get", "/api/v1/leaderboard", token).json()["decision"]
    assert decision["best"] is None and decision["fastest"]["model"] == smollm.slug
    assert (f"Speeds not measured alike: {gemma.label} is measured only while other answers shared the worker, "
            "the others alone; compare speeds with care.") in decision["caveats"]
