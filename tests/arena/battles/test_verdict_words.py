"""Verdicts name the winner ("Gemma 3 270M is better"), not the side it sat on, wherever they
are listed; a blind battle keeps its neutral labels until the reveal (docs/blind.md)."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from tests.arena.factories import verdict

pytestmark = pytest.mark.django_db
WORDS = Template("{% load battle_tags %}{{ b|verdict }}|{{ b|verdict:True }}")


def words(battle) -> list[str]:
    return WORDS.render(Context({"b": battle})).split("|")


def test_a_named_verdict_names_its_winner_by_name_and_by_label(owner, catalogue):
    left, right = catalogue[0], catalogue[3]
    assert left.label and left.label != left.name  # labels are the short names tables use
    assert words(verdict(owner, left, right, "right")) == [f"{right.name} is better", f"{right.label} is better"]
    assert words(verdict(owner, left, right, "left")) == [f"{left.name} is better", f"{left.label} is better"]
    assert words(verdict(owner, left, right, "tie")) == ["Tie", "Tie"]
    assert words(verdict(owner, left, right, "both_bad")) == ["Both are bad", "Both are bad"]


def test_a_blind_verdict_names_nobody_before_the_reveal(owner, catalogue):
    left, right = catalogue[0], catalogue[3]
    hidden = verdict(owner, left, right, "right", blind=True)
    assert words(hidden) == ["Model B is better", "Model B is better"]
    shown = verdict(owner, left, right, "left", blind=True, revealed=True)
    shown.refresh_from_db()
    assert words(shown) == [f"{left.name} is better", f"{left.label} is better"]


def test_the_history_list_names_the_winner(client, owner, catalogue):
    battle = verdict(owner, catalogue[0], catalogue[3], "right")
    client.force_login(owner)
    html = client.get("/history/comparisons/").content.decode()
    assert f'<tr data-id="{battle.id}">' in html and f"{catalogue[3].label} is better" in html
    assert "Right is better" not in html
