"""The leaderboard page: fitted on the stored verdicts, filtered by mode and period, and
blind battles counted only once revealed. No model runs: battles are finished by hand."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from arena.battles.models import Battle
from arena.leaderboard.records import battle_records
from tests.arena.factories import leaderboard_order, verdict

pytestmark = pytest.mark.django_db


@pytest.fixture
def verdicts(owner, catalogue):
    smollm, spec, awq, gemma = catalogue[:4]
    for _ in range(6):
        verdict(owner, smollm, gemma, "left")
        verdict(owner, gemma, awq, "right")
    verdict(owner, smollm, awq, "tie")
    verdict(owner, spec, gemma, "both_bad")
    verdict(owner, smollm, smollm, "left")  # one model against itself: not a rating signal
    verdict(owner, gemma, smollm, "left", blind=True)  # a tournament not revealed yet
    verdict(owner, gemma, spec, "left", blind=True, revealed=True)
    return catalogue


def test_the_table_ranks_models_from_the_stored_verdicts(client, owner, verdicts):
    client.force_login(owner)
    html = client.get(reverse("leaderboard")).content.decode()
    order = leaderboard_order(html)
    assert set(order) == {"smollm2-135m", "smollm2-135m-spec", "smollm2-135m-awq", "gemma-3-270m"}
    assert order.index("smollm2-135m") < order.index("gemma-3-270m")
    assert order.index("smollm2-135m-awq") < order.index("gemma-3-270m")
    assert "from 15 verdicts" in html and "1 of them come from tournament matches" in html
    assert 'id="win-matrix"' in html and "<circle" in html


def test_blind_battles_count_only_once_revealed_and_self_matches_never(verdicts):
    records = battle_records()
    assert len(records) == 15
    assert not any(left == right for left, right, _s, _t in records)
    assert [r for r in records if r[3]] == [("gemma-3-270m", "smollm2-135m-spec", 1.0, True)]


def test_filters_by_mode_and_period(client, owner, verdicts):
    client.force_login(owner)
    blind = client.get(reverse("leaderboard") + "?mode=blind").content.decode()
    assert set(leaderboard_order(blind)) == {"gemma-3-270m", "smollm2-135m-spec"}
    named = client.get(reverse("leaderboard") + "?mode=named").content.decode()
    assert "from 14 verdicts" in named
    Battle.objects.update(voted_at=timezone.now() - timedelta(days=3))
    assert "No verdicts yet for this filter" in client.get(reverse("leaderboard") + "?days=1").content.decode()
    assert "from 15 verdicts" in client.get(reverse("leaderboard") + "?days=7&mode=bogus").content.decode()


def test_login_is_required(client, catalogue):
    response = client.get(reverse("leaderboard"))
    assert response.status_code == 302 and reverse("login") in response["Location"]
