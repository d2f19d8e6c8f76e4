"""Failure reasons as users read them: no server path or traceback; staff keep the full line
(Generation.metrics["failure_detail"], the catalogue probe); and an admin's package source is
validated without importing the package (inference/sources.check_source)."""

import pytest

from arena.catalogue.models import ModelEntry
from arena.catalogue.probe import _result
from arena.generations.models import Generation
from arena.playground.api import generation_json
from tests.arena.factories import generation

pytestmark = pytest.mark.django_db

RAW = ("The model failed to load: gguf file 'x.gguf' not found in /home/arena/.cache/llm-arena/models/x "
       "(Traceback (most recent call last):\n  File \"/work/main/inference/loading.py\", line 80, in load\n"
       "OSError: /work/main/var/x.bin)")


def test_a_stored_failure_carries_no_path_and_staff_keep_the_line(owner, smollm):
    gen = generation(owner, smollm)
    Generation.objects.filter(id=gen.id).update(status=Generation.Status.RUNNING, finished_at=None)
    gen.refresh_from_db()
    assert gen.finish(Generation.Status.FAILED, text="", reason=RAW)
    gen.refresh_from_db()
    assert "/home" not in gen.failure_reason and "/work" not in gen.failure_reason
    assert "Traceback" not in gen.failure_reason and gen.failure_reason.startswith("The model failed to load")
    assert gen.metrics["failure_detail"] == RAW
    assert RAW in _result(smollm, gen).error  # the probe is staff's: the full line
    shown = generation_json(gen)  # what the owner's API client reads
    assert "failure_detail" not in shown["request_metrics"] and "/home" not in str(shown)


def test_a_package_source_is_validated_without_importing_it(booby_trapped, catalogue):
    entry = ModelEntry(slug="trap", name="Trap", engine=ModelEntry.Engine.LLAMACPP, source="package:trap_gguf_pkg",
                       gguf_file="trap.gguf", memory_estimate_mb=100)
    errors = {}
    try:
        entry.clean()
    except Exception as exc:  # other fields' errors do not matter here
        errors = getattr(exc, "message_dict", {"?": [str(exc)]})
    assert "source" not in errors, errors
    assert not booby_trapped.exists()


def failed(owner, model):
    gen = generation(owner, model)
    Generation.objects.filter(id=gen.id).update(status=Generation.Status.RUNNING, finished_at=None)
    gen.refresh_from_db()
    assert gen.finish(Generation.Status.FAILED, text="", reason=RAW)
    return gen


@pytest.mark.parametrize("staff", [False, True])
def test_the_generation_page_shows_the_worker_line_to_staff_only(client, owner, smollm, staff):
    owner.is_staff = staff
    owner.save()
    client.force_login(owner)
    page = client.get(failed(owner, smollm).get_absolute_url()).content.decode()
    assert "The model failed to load" in page
    assert ("/home/arena/.cache" in page) == staff and ("staff only" in page) == staff


def test_a_comparison_page_shows_a_failed_sides_line_to_its_staff_owner(client, owner, catalogue):
    from tests.arena.factories import comparison

    owner.is_staff = True
    owner.save()
    battle = comparison(owner, catalogue[0], catalogue[1], texts=None)
    for gen in (battle.left, battle.right):
        Generation.objects.filter(id=gen.id).update(status=Generation.Status.RUNNING)
        gen.refresh_from_db()
        assert gen.finish(Generation.Status.FAILED, text="", reason=RAW)
    client.force_login(owner)
    page = client.get(battle.get_absolute_url()).content.decode()
    assert page.count("/home/arena/.cache") == 2


def test_staff_read_any_failure_with_its_line_in_the_admin_but_no_unrevealed_blind_answer(
        admin_client, owner, catalogue):
    from tests.arena.factories import comparison

    gen = failed(owner, catalogue[0])
    blind = comparison(owner, catalogue[0], catalogue[1], texts=None, blind=True)
    listing = admin_client.get("/admin/generations/generation/").content.decode()
    assert str(gen.id) in listing and str(blind.left.id) not in listing
    page = admin_client.get(f"/admin/generations/generation/{gen.id}/change/").content.decode()
    assert "/home/arena/.cache" in page
    assert admin_client.get(f"/admin/generations/generation/{blind.left.id}/change/").status_code == 302
