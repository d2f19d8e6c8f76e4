"""The leaderboard page's newer filters and sections: whose verdicts (people's by default, a
model judge's apart), judge-human agreement, per-tag boards from suite battles, the style
control toggle, and the quality-against-speed-and-memory charts."""

import json
import re
import time

import pytest
from django.urls import reverse

from arena import streams
from arena.battles.models import Battle
from arena.generations.models import Generation
from arena.leaderboard.measures import median_speeds
from tests.arena.factories import PARAMS, comparison, finish, leaderboard_order, verdict

pytestmark = pytest.mark.django_db


def judged(owner, left_gen, right_gen, outcome: str, judge, tag: str = "") -> Battle:
    """A model judge's verdict on two stored answers, as a suite run records it."""
    return Battle.objects.create(owner=owner, mode=Battle.Mode.SUITE, left=left_gen, right=right_gen, outcome=outcome,
                                 judge=judge, judge_template_version=1, tag=tag, voted_at=left_gen.finished_at,
                                 judgements=[{"order": "left_first", "raw": "A", "verdict": outcome},
                                             {"order": "right_first", "raw": "B", "verdict": outcome}])


@pytest.fixture
def verdicts(owner, catalogue):
    """People prefer smollm2 to gemma; the judge (on the same answers, and on suite pairs tagged
    "coding") prefers gemma."""
    smollm, spec, _awq, gemma = catalogue[:4]
    for _ in range(4):
        battle = verdict(owner, smollm, gemma, "left")
        judged(owner, battle.left, battle.right, "right", judge=spec)
    agreed = verdict(owner, spec, gemma, "right")
    judged(owner, agreed.right, agreed.left, "left", judge=spec)  # sides swapped, same winner
    for _ in range(3):
        suite = comparison(owner, gemma, spec, texts=("# Plan\n\n- one\n- **two**\n- three", "Two."))
        judged(owner, suite.left, suite.right, "left", judge=smollm, tag="coding")
    return catalogue


def page(client, query: str = "") -> str:
    return client.get(reverse("leaderboard") + query).content.decode()


def test_every_verdict_by_default_people_s_or_judges_apart_on_request(client, owner, verdicts):
    client.force_login(owner)
    every = page(client)
    assert "from 13 verdicts" in every and "5 from comparisons, 8 from model judges" in re.sub(r"<[^>]+>", "", every)
    human = page(client, "?source=human")
    assert "from 5 verdicts" in human and '<input type="checkbox" name="kind" value="judge">' in human
    assert leaderboard_order(human).index("smollm2-135m") < leaderboard_order(human).index("gemma-3-270m")
    judge = page(client, "?kind=judge")
    assert "from 8 verdicts" in judge and '<input type="checkbox" name="kind" value="judge" checked>' in judge
    assert leaderboard_order(judge)[0] == "gemma-3-270m"
    assert "from 8 verdicts" in page(client, "?source=judge")
    assert "from 13 verdicts" in page(client, "?source=both")
    assert "from 13 verdicts" in page(client, "?source=bogus")


def test_agreement_is_shown_with_its_count(client, owner, verdicts):
    client.force_login(owner)
    assert "Judge–human agreement 20% on 5 pairs judged by both." in page(client)
    assert "Judge–human agreement" not in page(client, "?tag=coding")  # no person judged those pairs


def test_suite_battles_give_per_tag_boards(client, owner, verdicts):
    client.force_login(owner)
    assert '<option value="coding">' in page(client)
    coding = page(client, "?tag=coding&source=judge")
    assert "from 3 verdicts" in coding and set(leaderboard_order(coding)) == {"gemma-3-270m", "smollm2-135m-spec"}
    assert "No verdicts yet for this filter" in page(client, "?tag=coding&source=human")  # people's: none


def test_the_style_toggle_shows_ratings_with_and_without_and_the_coefficients(client, owner, verdicts):
    client.force_login(owner)
    plain = page(client, "?source=both")
    assert "Without style control" not in plain and 'id="style-coefficients"' not in plain
    styled = page(client, "?source=both&style=1")
    assert "Rating with style control" in styled and "Without style control" in styled
    assert 'name="style" value="1" checked' in styled
    coefficients = styled.split('id="style-coefficients"')[1].split("</table>")[0]
    for label in ("Answer length (tokens)", "Headers", "List items", "Bold"):
        assert label in coefficients
    assert len(re.findall(r'<td class="plain-rating">', styled)) == len(leaderboard_order(styled)) == 3


def test_quality_charts_plot_measured_speed_and_memory_and_mark_the_front(client, owner, verdicts):
    client.force_login(owner)
    html = page(client)
    assert 'id="frontier-speed"' in html and 'id="frontier-memory"' in html
    speed = html.split('id="frontier-speed"')[1].split("</figure>")[0]
    assert "SmolLM2" in speed and "tokens/s" in speed and 'class="on-front"' in speed
    assert "(catalogue estimate)" in html and "(measured)" not in html
    smollm = verdicts[0]
    snapshot = {"at": time.time(), "nodes": [], "workers": [
        {"worker_id": "w1", "slug": smollm.slug, "node": "local", "state": "ready", "measured_mb": 321.0}]}
    client_, keys = streams.client(), streams.keys()
    client_.set(keys.orchestrator_status(), json.dumps(snapshot))
    try:
        assert "321.0 MB (measured)" in page(client)
    finally:
        client_.delete(keys.orchestrator_status())


def test_speeds_are_medians_over_finished_answers_that_may_be_named(owner, catalogue):
    smollm, gemma = catalogue[0], catalogue[3]
    fast = [finish(Generation.objects.create(owner=owner, model=smollm, prompt="Hi", params=PARAMS), rate=rate)
            for rate in (10.0, 20.0, 60.0)]
    finish(Generation.objects.create(owner=owner, model=smollm, prompt="Hi", params=PARAMS), rate=99.0,
           status=Generation.Status.FAILED)  # a failed answer's rate says little
    comparison(owner, gemma, smollm, mode=Battle.Mode.TOURNAMENT, blind=True)  # not revealed: left out
    assert median_speeds() == {"smollm2-135m": 20.0}
    assert median_speeds(Generation.objects.filter(id__in=[g.id for g in fast[:2]])) == {"smollm2-135m": 15.0}


def test_no_judge_verdicts_says_none_for_this_filter(client, owner, catalogue):
    verdict(owner, catalogue[0], catalogue[3], "left")
    client.force_login(owner)
    assert "No verdicts yet for this filter" in page(client, "?source=judge")
    assert "Judge–human agreement" not in page(client)
