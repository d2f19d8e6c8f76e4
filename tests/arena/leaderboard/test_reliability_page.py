"""The leaderboard's judge reliability panel: every judge's figures over all its stored readings
(a jury's readings each name their judge; older ones are the battle's judge's), people's
verdicts on the same pairs for kappa ("too few pairs" below the threshold), each share as counts
with its interval, and each judge's verdict."""

import html as html_lib
import re

import pytest
from django.urls import reverse

from arena.battles.judging import judgement
from arena.battles.models import Battle
from arena.leaderboard.reliability import MIN_PAIRS
from tests.arena.factories import verdict

pytestmark = pytest.mark.django_db


def panel(client) -> str:
    page = html_lib.unescape(client.get(reverse("leaderboard")).content.decode())
    found = re.search(r'<section class="judge-reliability" id="judge-reliability">.*?</section>', page, re.S)
    assert found, "no reliability panel"
    return found.group(0)


def row(html: str, slug: str) -> dict:
    found = re.search(rf'<tr data-judge="{slug}"[^>]*>(.*?)</tr>', html, re.S)
    assert found, slug
    cells = dict(re.findall(r'<td class="([a-z-]+)">(.*?)</td>', found.group(1), re.S))
    return {name: " ".join(text.split()) for name, text in cells.items()}


def test_the_panel_gives_each_judges_figures_and_verdict(client, owner, catalogue):
    client.force_login(owner)
    smollm, spec, awq, gemma = catalogue[:4]
    for i in range(MIN_PAIRS + 2):
        human = verdict(owner, smollm, gemma, "left" if i % 3 else "right")  # people: mostly smollm2
        readings = [
            # the lead judge (named by the battle only, as before juries): steady, always the left answer
            {"order": "left_first", "raw": "A", "verdict": "left"},
            {"order": "right_first", "raw": "B", "verdict": "left"},
            # a second judge that names the answer shown first: its orders always disagree
            judgement("left_first", "A", "left", judge=awq.slug, reason="first"),
            judgement("right_first", "A", "right", judge=awq.slug, reason="first"),
        ]
        Battle.objects.create(owner=owner, mode=Battle.Mode.SUITE, left=human.left, right=human.right,
                              outcome="left", judge=spec, judge_template_version=1, voted_at=human.voted_at,
                              judgements=readings)
    few = verdict(owner, smollm, spec, "left")
    Battle.objects.create(owner=owner, mode=Battle.Mode.SUITE, left=few.left, right=few.right, outcome="tie",
                          judge=gemma, judge_template_version=1, voted_at=few.voted_at,
                          judgements=[judgement(o, "C", "tie", judge=gemma.slug, reason="even")
                                      for o in ("left_first", "right_first")])
    html = panel(client)
    steady, first, lone = row(html, spec.slug), row(html, awq.slug), row(html, gemma.slug)
    assert steady["self-consistency"] == "12 of 12 (100%; 95%: 76%–100%)"
    assert steady["position-bias"] == "12 of 24 (50%; 95%: 31%–69%)" and steady["tie-rate"].startswith("0 of 24 (0%;")
    assert steady["judge-verdict"] == "<strong>Reliable</strong>"
    # People name its winner on 8 of 12 pairs, the other answer on 4: both ways round each names
    # either answer half the time, chance agreement 0.5: kappa (8/12 - 0.5) / 0.5 = 0.33.
    assert steady["kappa-people"].startswith("0.33 (95%: ") and steady["kappa-people"].endswith("on 12 pairs")
    assert first["self-consistency"].startswith("0 of 12 (0%;") and first["position-bias"].startswith("24 of 24 (100%;")
    assert first["judge-verdict"] == "<strong>Unreliable</strong>"
    assert "This judge picked the answer shown first in 24 of 24 readings" in html
    # One pair: its figures with an interval as wide as one pair allows, no kappa, not enough readings.
    assert lone["self-consistency"] == "1 of 1 (100%; 95%: 21%–100%)"
    assert lone["kappa-people"] == f"too few pairs (1 of {MIN_PAIRS})"
    assert lone["judge-verdict"] == "<strong>Not enough readings</strong>"
    # The two judges that met: one always names a winner, the other never does.
    met = f"<strong>{spec.label}</strong> with <strong>{awq.label}</strong>"
    assert f"{met}: κ 0.00 (95%: 0.00 to 0.00) on 12 pairs" in html
    assert "no better than chance" in html


def test_no_judge_no_panel(client, owner, catalogue):
    client.force_login(owner)
    verdict(owner, catalogue[0], catalogue[3], "left")
    assert 'id="judge-reliability"' not in client.get(reverse("leaderboard")).content.decode()
