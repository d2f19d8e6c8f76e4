"""Battles to vote on with reasons and verdicts that carry them, written straight to the database
(no model runs): what tests/live/test_vote_reasons_browser.py votes on and photographs in the
running application (`manage.py shell -c`)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils import timezone

from arena.battles.models import Battle, ReasonTag
from arena.battles.voting import DEFAULT_REASONS
from arena.generations.models import Generation

LEFT, RIGHT = "smollm2-135m-llamacpp", "gemma-3-270m-llamacpp"
# Verdicts with reasons, (outcome, reasons, comment): what the leaderboard's table counts.
NOTED = [("left", ["clearer"], ""), ("left", ["clearer", "too_long"], "The other one rambled."),
         ("right", ["factual_error"], ""), ("tie", ["off_topic"], ""), ("left", ["better_reasoning"], "")]


def _answer(owner, model, text: str) -> Generation:
    now = timezone.now()
    return Generation.objects.create(
        owner=owner, model=model, prompt="Describe a lighthouse in two sentences.", params={"max_new_tokens": 64},
        status=Generation.Status.DONE, text=text, finish_reason="stop", prompt_tokens=9, generated_tokens=30,
        time_to_first_token_s=0.4, tokens_per_s=14.0, started_at=now, finished_at=now)


def seed(username: str = "admin") -> dict[str, str]:
    """For `username`: an unjudged finished comparison and anonymous battle, and NOTED as judged
    comparisons; their ids."""
    from arena.catalogue.models import ModelEntry

    for position, (slug, label) in enumerate(DEFAULT_REASONS):
        ReasonTag.objects.get_or_create(slug=slug, defaults={"label": label, "position": position})
    owner = get_user_model().objects.get(username=username)
    left, right = ModelEntry.objects.get(slug=LEFT), ModelEntry.objects.get(slug=RIGHT)
    texts = ("A white tower stands on the rocks. Its lamp turns all night to warn the ships.",
             "Lighthouses are tall. They have lights. Ships see them. " * 3)

    def battle(**fields) -> Battle:
        return Battle.objects.create(owner=owner, left=_answer(owner, left, texts[0]),
                                     right=_answer(owner, right, texts[1]), **fields)

    now = timezone.now()
    for outcome, reasons, comment in NOTED:
        battle(outcome=outcome, reasons=reasons, comment=comment, voted_at=now)
    comparison = battle()
    anonymous = battle(mode=Battle.Mode.ANONYMOUS, blind=True, pick_reason="random")
    return {"comparison": str(comparison.id), "anonymous": str(anonymous.id)}


def stored(battle_id: str) -> dict:
    """A battle's verdict and note as stored."""
    b = Battle.objects.get(id=battle_id)
    return {"outcome": b.outcome, "reasons": b.reasons, "comment": b.comment, "revealed": b.revealed}
