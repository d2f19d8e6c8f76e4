"""Playground pages: forms, validation, ownership of permalinks."""

import pytest
from django.urls import reverse

from arena.generations.models import Generation
from tests.arena.factories import comparison, generation

pytestmark = pytest.mark.django_db


def post(client, headers=None, **data):
    form = {"model": "smollm2-135m", "prompt": "Hello", "temperature": "0.7", "top_p": "0.9", "max_new_tokens": "32"}
    return client.post(reverse("playground"), {**form, **data}, headers=headers or {})


def test_login_is_required(client, catalogue):
    response = client.get(reverse("playground"))
    assert response.status_code == 302 and reverse("login") in response["Location"]


def test_the_page_lists_catalogue_models(client, owner, smollm):
    client.force_login(owner)
    html = client.get(reverse("playground")).content.decode()
    assert "SmolLM2 135M Instruct" in html and 'name="max_new_tokens"' in html


def test_send_creates_a_generation_and_redirects_to_its_permalink(client, owner, smollm,
                                                                   django_capture_on_commit_callbacks):
    client.force_login(owner)
    with django_capture_on_commit_callbacks() as callbacks:
        response = post(client, system_prompt="Be brief.")
    gen = Generation.objects.get()
    assert response.status_code == 302 and response["Location"] == gen.get_absolute_url()
    assert gen.params == {"temperature": 0.7, "top_p": 0.9, "max_new_tokens": 32, "seed": None, "stop": []}
    assert gen.messages()[0] == {"role": "system", "content": "Be brief."}
    assert len(callbacks) == 1  # the run_generation task, enqueued once the row is committed


def test_htmx_send_returns_the_streaming_panel(client, owner, smollm, django_capture_on_commit_callbacks):
    client.force_login(owner)
    with django_capture_on_commit_callbacks():
        response = post(client, headers={"HX-Request": "true"})
    html = response.content.decode()
    gen = Generation.objects.get()
    assert response.status_code == 200 and f'ws-connect="/ws/generations/{gen.id}/?recent=1"' in html
    assert "<html" not in html
    # The recent list, swapped in beside it, shows the new generation at once.
    assert 'id="recent-generations" class="card recent" hx-swap-oob="true"' in html
    assert f'id="recent-{gen.id}"' in html


def test_recent_generations_are_only_the_users_own_playground_ones(client, owner, outsider, smollm):
    """As History lists them: no comparison's sides, no suite run's answers or judge's prompts."""
    mine = generation(owner, smollm, "A playground question about herons", text="Grey.")
    comparison(owner, smollm, smollm, "A comparison prompt about owls")
    generation(owner, smollm, "Please act as an impartial judge of two answers about otters", text="[[A]]",
               origin=Generation.Origin.SUITE)
    generation(owner, smollm, "A suite question about badgers", text="Brown.", origin=Generation.Origin.SUITE)
    generation(outsider, smollm, "Someone else's question about voles", text="Small.")
    client.force_login(owner)
    html = client.get(reverse("playground")).content.decode()
    recent = html.split('id="recent-generations"')[1]
    assert f'id="recent-{mine.id}"' in recent and "herons" in recent
    for other in ("owls", "impartial judge", "badgers", "voles"):
        assert other not in recent, other


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("temperature", "3", "less than or equal to 2.0"),
        ("temperature", "hot", "Enter a number"),
        ("top_p", "0", "greater than or equal to 0.01"),
        ("max_new_tokens", "100000", "less than or equal to 2048"),
        ("max_new_tokens", "1.5", "Enter a whole number"),
        ("prompt", "   ", "Write a prompt"),
        ("model", "no-such-model", "No enabled catalogue model"),
    ],
)
def test_wrong_values_give_a_form_error_not_a_500(client, owner, smollm, field, value, message):
    client.force_login(owner)
    response = post(client, **{field: value})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not Generation.objects.exists()


def test_a_huge_prompt_is_refused(client, owner, smollm, settings):
    client.force_login(owner)
    response = post(client, prompt="x" * (settings.ARENA_MAX_PROMPT_CHARS + 1))
    assert response.status_code == 400 and "at most" in response.content.decode()


def test_only_the_owner_can_open_a_permalink(client, owner, outsider, smollm):
    gen = Generation.objects.create(owner=owner, model=smollm, prompt="secret prompt", params={})
    client.force_login(outsider)
    assert client.get(gen.get_absolute_url()).status_code == 404
    client.force_login(owner)
    response = client.get(gen.get_absolute_url())
    assert response.status_code == 200 and "secret prompt" in response.content.decode()


def test_a_finished_generation_shows_its_text_and_metrics_without_a_socket(client, owner, smollm):
    gen = Generation.objects.create(owner=owner, model=smollm, prompt="Hi", params={})
    gen.finish(Generation.Status.DONE, text="<script>alert(1)</script>Paris",
               metrics={"generated_tokens": 7, "decode_tokens_per_s": 14.2,
                        "first_scheduled_time": gen.created_at.timestamp(),
                        "first_token_time": gen.created_at.timestamp() + 2})
    client.force_login(owner)
    html = client.get(gen.get_absolute_url()).content.decode()
    assert "ws-connect" not in html and "14.2" in html and "2.00 s" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;Paris" in html and "<script>alert(1)" not in html


def test_htmx_send_with_wrong_values_returns_the_form_with_errors(client, owner, smollm):
    client.force_login(owner)
    response = post(client, headers={"HX-Request": "true"}, temperature="5")
    html = response.content.decode()
    assert response.status_code == 400 and 'id="playground-form"' in html and "<html" not in html


def test_stop_sequences_are_one_per_line_with_escapes(client, owner, smollm, django_capture_on_commit_callbacks):
    client.force_login(owner)
    with django_capture_on_commit_callbacks():
        post(client, stop="END\r\n\\n\\n\r\n")
    assert Generation.objects.get().params["stop"] == ["END", "\n\n"]
