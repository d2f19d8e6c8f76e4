"""Share links keep only a digest of their token: the database never holds a link that opens
anything, links made before (migration 0004) keep working, and a deactivated owner's links die."""

import hashlib

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from arena.history.models import NEW_LINKS, ShareLink
from tests.arena.factories import generation


@pytest.mark.django_db
def test_only_a_digest_of_the_token_is_stored(owner, catalogue):
    gen = generation(owner, catalogue[0], text="Blue.")
    link = ShareLink.share(owner, gen)
    stored = ShareLink.objects.filter(id=link.id).values().get()
    assert link.token and link.token not in str(stored)
    assert stored["digest"] == hashlib.sha256(link.token.encode()).hexdigest() and stored["hint"] == link.token[:6]
    assert ShareLink.objects.resolve(link.token) == link
    assert ShareLink.objects.resolve(stored["digest"]) is None  # the digest itself opens nothing
    assert ShareLink.share(owner, gen).token is None  # the link again: its token is not known any more
    with pytest.raises(ValueError):
        ShareLink.objects.get(id=link.id).get_absolute_url()


@pytest.mark.django_db
def test_the_owners_page_shows_the_new_link_once(client, owner, catalogue):
    gen = generation(owner, catalogue[0], text="Blue.")
    client.force_login(owner)
    client.post(reverse("share-create", args=["generation", gen.id]))
    token = client.session[NEW_LINKS][str(ShareLink.objects.get().id)]
    first = client.get(gen.get_absolute_url()).content.decode()
    assert f"/s/{token}/" in first and "shown this once" in first
    later = client.get(gen.get_absolute_url()).content.decode()
    assert token not in later and f"/s/{token[:6]}…" in later and "Revoke link" in later
    assert token not in client.get("/history/shared/").content.decode()
    assert client.__class__().get(f"/s/{token}/").status_code == 200


@pytest.mark.django_db
def test_a_deactivated_owners_links_open_nothing(client, owner, catalogue):
    link = ShareLink.share(owner, generation(owner, catalogue[0], text="Blue."))
    assert client.get(f"/s/{link.token}/").status_code == 200
    owner.is_active = False
    owner.save()
    response = client.get(f"/s/{link.token}/")
    assert response.status_code == 404 and "Blue." not in response.content.decode()


@pytest.mark.django_db(transaction=True)
def test_the_migration_hashes_links_already_handed_out(client, owner, catalogue):
    gen = generation(owner, catalogue[0], text="Blue from before.")
    executor = MigrationExecutor(connection)
    executor.migrate([("history", "0003_sharelink_suite_run")])
    old = executor.loader.project_state([("history", "0003_sharelink_suite_run")]).apps.get_model("history",
                                                                                                  "ShareLink")
    token = "Qx7" + "a" * 40
    old.objects.create(token=token, owner_id=owner.id, generation_id=gen.id)
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    link = ShareLink.objects.get()
    assert link.digest == hashlib.sha256(token.encode()).hexdigest() and link.hint == "Qx7aaa"
    response = client.get(f"/s/{token}/")
    assert response.status_code == 200 and "Blue from before." in response.content.decode()
