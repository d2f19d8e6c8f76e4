"""A request the API refuses for want of a token (401) tells a member where to make one: their API
tokens page, by its URL, not `manage.py arena_token` (a command only an operator can run). Both
APIs: the arena's JSON API and the OpenAI-compatible one."""

import json

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("header", ["", "Bearer arena_wrong"])
def test_the_json_apis_401_names_the_tokens_page_by_its_url(client, header):
    response = client.get("/api/v1/export/battles", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    message = response.json()["error"]["message"]
    assert f"http://testserver{reverse('account-tokens')}" in message and "API tokens page" in message
    assert "manage.py" not in message


@pytest.mark.parametrize("header", ["", "Bearer arena_wrong"])
def test_the_openai_compatible_apis_401_names_the_tokens_page(client, header):
    response = client.post("/v1/chat/completions", json.dumps({"model": "x", "messages": []}),
                           content_type="application/json", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    message = response.json()["error"]["message"]
    assert reverse("account-tokens") in message and "API tokens page" in message and "manage.py" not in message
