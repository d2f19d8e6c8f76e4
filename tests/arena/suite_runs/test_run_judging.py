"""People judging a suite run's pairs blind: neutral labels, no names or speeds before the
reveal, the vote stored in the pair's own left/right terms whichever side was shown as A,
a pair judged once, the reveal at the end; round robin, knockout and judgeless knockout pairs."""

from __future__ import annotations

import json
import re
from unittest import mock

import pytest

from arena.battles.models import Battle
from arena.suite_runs.actions import record_human_verdict, reveal_for, start_run
from arena.suite_runs.models import SuiteRun, VerdictError
from tests.arena.factories import identifiers, suite
from tests.arena.suite_runs.running import run_to_end

pytestmark = pytest.mark.django_db


def people_run(owner, models, fmt="round_robin", judge_model=None, prompts=("Capital of France?",)) -> SuiteRun:
    run = start_run(owner, suite=suite(owner, *prompts, tag="geo"), contestants=models, format=fmt,
                    judge_model=judge_model)
    run_to_end(run, answer="Paris")
    run.refresh_from_db()
    return run


def shown(html: str) -> tuple[str, str, str]:
    """The token and the texts shown as A and B."""
    token = re.search(r'name="token" value="([^"]+)"', html).group(1)
    a, b = (re.sub(r"</?p>", "", text).strip()
            for text in re.findall(r'<div class="output markdown answer-text">(.*?)</div>', html, re.S))
    return token, a, b


@pytest.mark.parametrize("a_side", ["left", "right"])
def test_a_vote_is_stored_in_the_pairs_terms_whichever_side_was_a(mine, owner, catalogue, a_side):
    left, right = catalogue[:2]
    run = people_run(owner, [left, right])
    with mock.patch("arena.suite_runs.views.random.choice", return_value=a_side):
        html = mine.get(f"/suite-runs/{run.id}/judge").content.decode()
    token, a_text, _b = shown(html)
    assert a_text == f"Paris ({(left if a_side == 'left' else right).slug})"
    response = mine.post(f"/suite-runs/{run.id}/judge", {"token": token, "choice": "a"})
    assert response.status_code == 302
    battle = Battle.objects.get(mode="suite", judge__isnull=True)
    assert battle.left.model == left and battle.right.model == right  # the pair's own order
    assert battle.outcome == a_side and battle.blind and battle.owner == owner and battle.tag == "geo"


def test_nothing_names_a_contestant_or_a_speed_before_the_reveal(mine, owner, catalogue):
    run = people_run(owner, catalogue[:2])
    html = mine.get(f"/suite-runs/{run.id}/judge").content.decode()
    assert "Capital of France?" in html and ">A<" in html and ">B<" in html
    # The answers name their model (the test's fake text): strip them, then nothing else may.
    page = re.sub(r'<div class="output markdown answer-text">.*?</div>', "", html, flags=re.S)
    for word in identifiers(catalogue[:2]):
        assert word not in page, word
    assert "tokens/s" not in html and "tok/s" not in html


def test_each_pair_is_judged_once_then_the_names_are_revealed(mine, owner, catalogue):
    run = people_run(owner, catalogue[:3], prompts=("One?", "Two?"))
    tokens = []
    for _ in range(6):  # 3 pairs x 2 prompts
        token, _a, _b = shown(mine.get(f"/suite-runs/{run.id}/judge").content.decode())
        tokens.append(token)
        assert mine.post(f"/suite-runs/{run.id}/judge", {"token": token, "choice": "tie"}).status_code == 302
    assert Battle.objects.filter(mode="suite", judge__isnull=True).count() == 6
    again = mine.post(f"/suite-runs/{run.id}/judge", {"token": tokens[0], "choice": "b"})
    assert again.status_code == 409 and "already judged this pair" in again.content.decode()
    assert Battle.objects.filter(mode="suite", judge__isnull=True).count() == 6
    html = mine.get(f"/suite-runs/{run.id}/judge").content.decode()
    assert "judging of this run is over" in html and catalogue[0].name in html
    assert not Battle.objects.filter(mode="suite", revealed=False, blind=True).exists()


def test_finish_reveals_early(mine, owner, catalogue):
    run = people_run(owner, catalogue[:3])
    token, _a, _b = shown(mine.get(f"/suite-runs/{run.id}/judge").content.decode())
    mine.post(f"/suite-runs/{run.id}/judge", {"token": token, "choice": "both_bad"})
    assert Battle.objects.get(judge__isnull=True, mode="suite").revealed is False
    token, _a, _b = shown(mine.get(f"/suite-runs/{run.id}/judge").content.decode())
    mine.post(f"/suite-runs/{run.id}/judge", {"finish": "1"})
    assert Battle.objects.get(judge__isnull=True, mode="suite").revealed is True
    # The same answers come again in the other pairs: after the reveal, nothing more is judged.
    html = mine.get(f"/suite-runs/{run.id}/judge").content.decode()
    assert "judging of this run is over" in html and 'name="token"' not in html
    late = mine.post(f"/suite-runs/{run.id}/judge", {"token": token, "choice": "a"})
    assert late.status_code == 409 and Battle.objects.filter(judge__isnull=True, mode="suite").count() == 1


def test_a_forged_or_foreign_token_is_refused(mine, owner, catalogue):
    run = people_run(owner, catalogue[:2])
    other = people_run(owner, catalogue[2:4])
    token, _a, _b = shown(mine.get(f"/suite-runs/{other.id}/judge").content.decode())
    for bad in (token, token[:-2] + "xx", "nonsense"):
        response = mine.post(f"/suite-runs/{run.id}/judge", {"token": bad, "choice": "a"})
        assert response.status_code == 409 and "not shown by this page" in response.content.decode()
    assert not Battle.objects.filter(judge__isnull=True, mode="suite").exists()


def test_people_judge_a_judged_knockouts_bracket_and_a_judgeless_one_round_robin(owner, catalogue):
    bracket = people_run(owner, catalogue[:4], "knockout", judge_model=catalogue[0])
    assert bracket.people_follow_judge
    pairs = {(p.left.id, p.right.id) for p in bracket.people_pairs()}
    assert pairs == set(bracket.verdicts().values_list("left_id", "right_id")) and len(pairs) == 3
    free = people_run(owner, catalogue[:4], "knockout")
    assert not free.people_follow_judge and len(free.people_pairs()) == 6


def test_the_model_refuses_a_pair_it_does_not_hold(owner, catalogue):
    run = people_run(owner, catalogue[:2])
    pair = run.next_pair_for(owner)
    with pytest.raises(VerdictError):
        record_human_verdict(run, owner, pair.right.id, pair.left.id, "left")  # the order matters
    with pytest.raises(VerdictError):
        record_human_verdict(run, owner, pair.left.id, pair.right.id, "maybe")
    record_human_verdict(run, owner, pair.left.id, pair.right.id, "left")
    assert run.next_pair_for(owner) is None


def test_a_people_judged_runs_llm_comparator_file_holds_the_revealed_verdicts(mine, owner, catalogue):
    left, right = catalogue[:2]
    run = people_run(owner, [left, right])
    pair = run.next_pair_for(owner)
    record_human_verdict(run, owner, pair.left.id, pair.right.id, "right")
    url = f"/suite-runs/{run.id}/export.jsonl"
    assert json.loads(mine.get(url).getvalue())["examples"] == []  # not revealed yet
    reveal_for(run, owner)
    example, = json.loads(mine.get(url).getvalue())["examples"]
    assert example["score"] == -1.0 and example["output_text_b"] == f"Paris ({right.slug})"
    assert [r["score"] for r in example["individual_rater_scores"]] == [-1.0]
