"""The blind secrecy rule (arena/battles/secrecy.py): a viewer's unfinished blind battles hide
their models (and a speculative one's draft) from that viewer's worker pages; what the apps above
register joins the rule; catalogue asks it through its own hook; `redact` names no secret slug.
The pages that apply it: tests/arena/workers/test_secrecy.py."""

import pytest
from django.contrib.auth import get_user_model

from arena.battles import secrecy
from arena.battles.secrecy import REDACTED, redact, secret_slugs
from arena.catalogue import hiding
from arena.catalogue.models import ModelEntry
from tests.arena.factories import comparison, finish_battle

pytestmark = pytest.mark.django_db


def entry(smollm, slug, name, **fields):
    return ModelEntry.objects.create(slug=slug, name=name, source=smollm.source, gguf_file=smollm.gguf_file, **fields)


@pytest.fixture
def judge(db):
    return get_user_model().objects.create_user("judge", password="judge-pass-123")


def test_an_unfinished_blind_battle_hides_its_models_and_a_speculative_ones_draft(judge, smollm):
    kestrel = entry(smollm, "kestrel-7b", "Kestrel Seven")
    draft = entry(smollm, "wren-1b", "Wren One")
    spec = entry(smollm, "wren-1b-spec", "Wren One spec", kind=ModelEntry.Kind.SPECULATIVE, draft=draft)
    battle = comparison(judge, spec, kestrel, texts=None, mode="tournament", blind=True)
    assert secret_slugs(judge) == {"wren-1b-spec", "wren-1b", "kestrel-7b"}
    assert set(hiding.hidden_from(judge).values_list("slug", flat=True)) == secret_slugs(judge)  # the same rule
    finish_battle(battle)
    assert secret_slugs(judge) == frozenset()  # both answers are in: nothing left to time
    assert secret_slugs(None) == frozenset()


def test_a_registered_source_joins_the_rule_once(judge, smollm, monkeypatch):
    osprey = entry(smollm, "osprey-3b", "Osprey Three")
    monkeypatch.setattr(secrecy, "_sources", list(secrecy._sources))
    seen = []

    def source(user, cutoff):
        seen.append((user, cutoff))
        return ModelEntry.objects.filter(slug="osprey-3b").values("id")

    secrecy.register(source)
    secrecy.register(source)
    assert secret_slugs(judge) == {osprey.slug}
    assert len(seen) == 1 and seen[0][0] == judge


def test_redact_replaces_a_secret_slug_or_worker_id_but_not_a_longer_slug():
    hide = frozenset({"kestrel-7b", "osprey-3b"})
    assert redact("evicted to make room for kestrel-7b", hide) == f"evicted to make room for {REDACTED}"
    assert redact("osprey-3b-0a1b2c3d stopped; kestrel-7b.", hide) == f"{REDACTED} stopped; {REDACTED}."
    assert redact("evicted to make room for kestrel-7b-awq", hide) == "evicted to make room for kestrel-7b-awq"
    assert redact("idle for 600 s", frozenset()) == "idle for 600 s"
