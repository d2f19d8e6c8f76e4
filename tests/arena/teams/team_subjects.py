"""A team's work written straight to the database (no model runs): what
tests/live/test_teams_browser.py opens as a teammate in the running application (`manage.py shell
-c`). "Search" holds the lead and a teammate (neither staff), "Support" a stranger, "Research" the
lead again (who works in Search, their first); the lead owns
an unjudged blind anonymous battle and a judged comparison, both finished."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils import timezone

from arena.battles.models import Battle
from arena.generations.models import Generation
from arena.suites.models import Suite, SuitePrompt
from arena.teams import membership
from arena.teams.models import Team

LEFT, RIGHT = "smollm2-135m-llamacpp", "gemma-3-270m-llamacpp"
PASSWORD = "team-browser-pass-7"
TEXTS = ("A white tower stands on the rocks. Its lamp turns all night to warn the ships.",
         "Lighthouses are tall. They have lights. Ships see them.")


def _user(name: str):
    user, _ = get_user_model().objects.get_or_create(username=name)
    user.set_password(PASSWORD)
    user.save()
    return user


def seed() -> dict:
    from arena.catalogue.models import ModelEntry

    lead, mate, stranger = _user("teamlead"), _user("teammate"), _user("stranger")
    search, _ = Team.objects.get_or_create(name="Search")
    support, _ = Team.objects.get_or_create(name="Support")
    research, _ = Team.objects.get_or_create(name="Research")
    for team, user in ((search, lead), (search, mate), (support, stranger), (research, lead)):
        membership.add_member(team, user)  # the lead is in two: the header's switcher
    left, right = ModelEntry.objects.get(slug=LEFT), ModelEntry.objects.get(slug=RIGHT)
    now = timezone.now()

    def answer(model, text: str) -> Generation:
        return Generation.objects.create(
            owner=lead, team=search, model=model, prompt="Describe a lighthouse in two sentences.",
            params={"max_new_tokens": 64}, status=Generation.Status.DONE, text=text, finish_reason="stop",
            prompt_tokens=9, generated_tokens=20, time_to_first_token_s=0.4, tokens_per_s=14.0, started_at=now,
            finished_at=now)

    def battle(**fields) -> Battle:
        return Battle.objects.create(owner=lead, team=search, left=answer(left, TEXTS[0]),
                                     right=answer(right, TEXTS[1]), **fields)

    anonymous = battle(mode=Battle.Mode.ANONYMOUS, blind=True, pick_reason="random")
    suite = Suite.objects.create(owner=lead, team=search, name="Lighthouse prompts", tag="lighthouses")
    SuitePrompt.objects.create(suite=suite, version=1, position=1, prompt="Describe a lighthouse in two sentences.")
    judged = battle(outcome="left", reasons=["clearer"], comment="tmb-comment-41 the first was vivid", voted_at=now)
    return {"anonymous": str(anonymous.id), "comparison": str(judged.id), "suite": str(suite.id),
            "names": [left.name, right.name]}
