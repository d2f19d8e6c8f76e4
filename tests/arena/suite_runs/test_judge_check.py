"""A quick check of a catalogue entry as a judge (arena.suite_runs.judge_checks), started from
the catalogue's admin: eight plain pairs read both ways through the judge's own prompt and
constrained reply, queued in the fair line (the request does not wait), and what the new-run
form then shows of each judge before it is chosen. The generations are ended as a worker ends
them (tests/arena/factories.finish)."""

from __future__ import annotations

import html as html_lib
import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from arena.generations.models import Generation
from arena.leaderboard import validity
from arena.suite_runs import judge, judge_checks
from arena.suite_runs.models import JudgeCheck
from tests.arena.factories import finish

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("staff", password="staff-pass-1", is_staff=True, is_superuser=True)


def start_from_admin(client, staff, entry) -> JudgeCheck:
    client.force_login(staff)
    response = client.post(reverse("admin:catalogue_modelentry_changelist"),
                           {"action": "quick_judge_check", "_selected_action": [entry.pk]}, follow=True)
    assert response.status_code == 200
    assert "A quick judge check started for " + entry.name in html_lib.unescape(response.content.decode())
    return JudgeCheck.objects.get(judge=entry)


def answer_all(check: JudgeCheck, letter_for) -> None:
    for reading in check.readings.select_related("generation"):
        letter = letter_for(reading)
        finish(reading.generation, json.dumps({"verdict": letter, "reason": f"{letter} reads better."}))


def known(client, slug: str) -> str:
    page = html_lib.unescape(client.get(reverse("suite-run-new")).content.decode())
    found = re.search(rf'<li data-judge="{slug}" data-verdict="([^"]+)">(.*?)</li>', page, re.S)
    assert found, f"no line for {slug}"
    return found.group(1) + " | " + " ".join(re.sub(r"<[^>]+>", "", found.group(2)).split())


def test_the_admin_queues_a_check_and_the_form_marks_an_always_a_judge_unreliable(client, staff, catalogue):
    entry, other = catalogue[2], catalogue[3]
    check = start_from_admin(client, staff, entry)
    gens = Generation.objects.filter(run_kind=judge_checks.CHECK_KIND, run_id=check.id)
    # Queued, not run in the request: sixteen readings, each the judge's own prompt and schema.
    assert gens.count() == 16 and set(gens.values_list("status", flat=True)) == {Generation.Status.QUEUED}
    assert all(g.params["json_schema"] == judge.VERDICT_SCHEMA and "Reply with a JSON object" in g.prompt
               for g in gens)
    assert known(client, entry.slug).endswith("A quick check is running: 16 readings to come.")
    assert known(client, other.slug) == f"unchecked | {other.label or other.name}: not checked yet."
    answer_all(check, lambda reading: "A")
    line = known(client, entry.slug)
    assert line.startswith("unreliable | ")
    assert ("This judge picked the answer shown first in 16 of 16 readings: its verdicts say nothing about the "
            "answers.") in line
    assert "its quick checks judged 0 of 8 plain pairs right" in line and "running" not in line
    # Its replies are the judging's, not the model's results: not in structured output, not in History.
    assert entry.slug not in {row["model"] for row in validity.rates()}
    assert "Reply with a JSON object" not in client.get(reverse("history")).content.decode()


def test_a_judge_that_picks_the_better_answer_is_counted_right_but_not_yet_called_reliable(client, staff, catalogue):
    entry = catalogue[2]
    check = start_from_admin(client, staff, entry)
    # The better answer is shown first in the left_first reading, second in the other.
    answer_all(check, lambda reading: "A" if reading.order == "left_first" else "B")
    line = known(client, entry.slug)
    assert line.startswith("not enough readings | ")
    assert "8 pairs read both ways" in line and "judged 8 of 8 plain pairs right" in line


def test_a_failed_reading_is_not_a_reading(client, staff, catalogue):
    entry = catalogue[2]
    check = start_from_admin(client, staff, entry)
    for reading in check.readings.select_related("generation"):
        if reading.pair == 0 and reading.order == "right_first":
            finish(reading.generation, "", status=Generation.Status.FAILED)
        else:
            finish(reading.generation, json.dumps({"verdict": "A", "reason": "A."}))
    readings = {r.left: r for r in judge_checks.check_readings()}
    assert not readings["check:0:better"].both and readings["check:1:better"].both
    assert len(readings) == len(judge_checks.PAIRS)
