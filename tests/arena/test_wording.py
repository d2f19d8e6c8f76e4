"""Words that said more, or other, than what was so (issue 35): an anonymous battle's share panel
calls it an anonymous battle (not "this tournament match"), hidden until the vote; a randomly
seeded tournament's replay says its seeding is drawn again (not "same ... seeding (drawn
again)"); the suite-run docs give the same contestant limit as the form."""

from pathlib import Path

import pytest
from django.urls import reverse

from arena.battles.models import Battle
from arena.history.models import ShareLink
from arena.suite_runs.models import SuiteRun
from arena.tournaments.actions import start_tournament
from tests.arena.factories import BLIND_PARAMS, comparison, play_through

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_an_anonymous_battles_share_panel_names_it_so(client, owner, catalogue):
    battle = comparison(owner, catalogue[0], catalogue[3], mode=Battle.Mode.ANONYMOUS, blind=True)
    ShareLink.share(owner, battle)
    client.force_login(owner)
    page = client.get(reverse("arena-battle", args=[battle.id])).content.decode()
    assert "can read this anonymous battle" in page and "until your vote" in page
    assert "tournament match" not in page and "until the reveal" not in page


@pytest.mark.django_db
@pytest.mark.parametrize("seeding, words", [("random", "The same contestants, the seeding drawn again, a new prompt"),
                                            ("given", "The same contestants and seeding, a new prompt")])
def test_a_replay_says_what_it_keeps(client, owner, catalogue, seeding, words):
    t = play_through(start_tournament(owner, contestants=catalogue[:4], prompt="Hi?", params=BLIND_PARAMS,
                                      seeding=seeding))
    client.force_login(owner)
    page = client.get(t.get_absolute_url()).content.decode()
    assert words in page and "(drawn again)" not in page


def test_the_docs_give_the_suite_run_forms_contestant_limit():
    limit = f"{SuiteRun.MIN_CONTESTANTS} to {SuiteRun.MAX_CONTESTANTS}"
    form = (ROOT / "templates/suite_runs/new.html").read_text()
    assert f"Contestants ({limit}," in form
    for doc in ("README.md", "docs/using.md", "docs/api.md", "docs/suites.md"):
        text = (ROOT / doc).read_text()
        assert "2 to 8 " not in text and limit in text, doc
