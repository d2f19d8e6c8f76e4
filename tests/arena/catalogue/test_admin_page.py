"""An entry's admin page: only the sections of its engine are shown (the others are rendered hidden,
for the page's script to show when the engine changes: its Chromium test is in
tests/live/test_catalogue_admin.py), and its Test button posts to a staff-only view whose result
shows on the page."""

import re

import pytest
from django.contrib.auth import get_user_model

from arena.catalogue.admin import SECTIONS
from arena.catalogue.models import ModelEntry
from arena.generations.models import Generation

pytestmark = pytest.mark.django_db
SECTION = re.compile(r'<fieldset class="module aligned ([^"]*)"[^>]*>\s*<h2[^>]*>([^<]+)</h2>')


def sections(html: str) -> dict[str, bool]:
    """Each engine-specific section's title -> whether it is shown."""
    return {title: "hidden" not in classes.split()
            for classes, title in SECTION.findall(html) if "engine-section" in classes}


@pytest.fixture
def hosted(db):
    return ModelEntry.objects.create(slug="hosted", name="Hosted", engine="openai", enabled=False,
                                     base_url="http://127.0.0.1:9/v1", remote_model="team/model")


def test_an_openai_entry_shows_its_endpoint_not_weights_precision_or_draft(admin_client, hosted):
    html = admin_client.get(f"/admin/catalogue/modelentry/{hosted.pk}/change/").content.decode()
    assert sections(html) == {
        "Check before enabling": True, "Managed server": False, "OpenAI-compatible endpoint": True,
        "The model at the server": True, "API key": True, "Model files": False, "Kind and draft model": False,
        "Precision": False,
    }
    assert 'name="api_key"' in html and 'type="password"' in html


def test_a_transformers_entry_shows_weights_precision_and_draft_not_the_endpoint(admin_client, catalogue):
    smollm = catalogue[0]
    assert smollm.engine == "transformers"
    html = admin_client.get(f"/admin/catalogue/modelentry/{smollm.pk}/change/").content.decode()
    shown = {title for title, visible in sections(html).items() if visible}
    assert shown == {"Model files", "Kind and draft model", "Precision"}


def test_a_llamacpp_entry_has_no_precision_and_the_add_page_follows_its_engine(admin_client, catalogue):
    llama = next(e for e in catalogue if e.engine == "llamacpp")
    html = admin_client.get(f"/admin/catalogue/modelentry/{llama.pk}/change/").content.decode()
    assert {t for t, v in sections(html).items() if v} == {"Model files", "Kind and draft model"}
    add = admin_client.get("/admin/catalogue/modelentry/add/?engine=server").content.decode()
    assert {t for t, v in sections(add).items() if v} == {"Check before enabling", "Managed server",
                                                          "The model at the server", "Model files"}
    # Every field is in the form (switching the engine on the page needs them) and in one section only.
    fields = [f for _, _, names in SECTIONS for f in names]
    assert len(fields) == len(set(fields))


def test_fields_the_engine_does_not_use_go_back_to_their_defaults(admin_client, catalogue):
    """A precision left from the transformers engine is hidden for llama.cpp: it must neither fail the
    entry unseen nor stay."""
    llama = next(e for e in catalogue if e.engine == "llamacpp")
    response = admin_client.post(f"/admin/catalogue/modelentry/{llama.pk}/change/", {
        "name": llama.name, "label": llama.label, "slug": llama.slug, "engine": "llamacpp", "kind": "full",
        "precision": "fp16", "source": llama.source, "gguf_file": llama.gguf_file, "memory_estimate_mb": 300,
        "base_url": "http://left-over/v1", "default_params": "{}", "context_length": 0, "max_concurrency": 0,
        "enabled": "on",
    })
    assert response.status_code == 302, response.content.decode()[:2000]
    llama.refresh_from_db()
    assert (llama.precision, llama.base_url, llama.enabled) == ("auto", "", True)


def test_the_test_button_posts_to_the_test_view(admin_client, hosted):
    html = admin_client.get(f"/admin/catalogue/modelentry/{hosted.pk}/change/").content.decode()
    form = re.search(r'<form method="post" action="([^"]+)" class="catalogue-test-form">', html)
    assert form and form.group(1) == f"/admin/catalogue/modelentry/{hosted.pk}/test/"
    assert "data-catalogue-test" in html and "/static/js/catalogue_admin.js" in html

    response = admin_client.post(form.group(1), follow=True)
    page = response.content.decode()
    assert response.redirect_chain[-1][0] == f"/admin/catalogue/modelentry/{hosted.pk}/change/"
    assert "Hosted: the check failed: The endpoint is not reachable: GET http://127.0.0.1:9/v1/models" in page
    hosted.refresh_from_db()
    assert hosted.check_error.startswith("The endpoint is not reachable") and not hosted.enabled
    assert not Generation.objects.exists()  # a failed check starts nothing


def test_the_test_button_of_a_disabled_entry_says_to_enable_it(admin_client, catalogue):
    smollm = catalogue[0]
    ModelEntry.objects.filter(pk=smollm.pk).update(enabled=False)
    page = admin_client.post(f"/admin/catalogue/modelentry/{smollm.pk}/test/", follow=True).content.decode()
    assert "is disabled: enable it (it is checked first) to test a generation" in page
    assert not Generation.objects.exists()


def test_the_test_view_is_staff_only_and_post_only(client, admin_client, hosted):
    url = f"/admin/catalogue/modelentry/{hosted.pk}/test/"
    assert admin_client.get(url).status_code == 405
    client.force_login(get_user_model().objects.create_user("member", password="member-pass-1"))
    response = client.post(url)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    hosted.refresh_from_db()
    assert hosted.checked_at is None  # nothing ran
