"""End to end through the running application, with the packaged SmolLM2: the API
starts a generation, the orchestrator spins a worker up, the answer is stored."""

import json
import time

import pytest
import websockets.exceptions
import websockets.sync.client as ws_client

pytestmark = [pytest.mark.live, pytest.mark.slow]


@pytest.fixture(scope="module")
def token(live_app):
    return live_app.token("api-user")


def test_healthz_is_200_with_every_part_up(live_app):
    import requests

    body = requests.get(live_app.url + "healthz", timeout=10).json()
    assert body["status"] == "ok", body
    assert all(check["ok"] for check in body["checks"].values())


def test_an_api_generation_runs_on_a_real_model_and_is_stored(live_app, token):
    response = live_app.api(token, "post", "/api/v1/generations", json={
        "model": "smollm2-135m", "prompt": "What is the capital of France?",
        "params": {"temperature": 0, "max_new_tokens": 24},
    })
    assert response.status_code == 202, response.text
    body = live_app.wait_generation(token, response.json()["id"])
    assert body["status"] == "done", body
    assert "Paris" in body["text"]
    metrics = body["metrics"]
    assert metrics["generated_tokens"] > 0 and metrics["prompt_tokens"] > 0
    assert metrics["time_to_first_token_s"] > 0 and metrics["tokens_per_s"] > 0


def test_a_late_joiner_gets_the_whole_answer_over_the_websocket(live_app, token):
    gen = live_app.api(token, "post", "/api/v1/generations", json={
        "model": "smollm2-135m", "prompt": "Name three colours.", "params": {"temperature": 0, "max_new_tokens": 16},
    }).json()
    stored = live_app.wait_generation(token, gen["id"])
    session = live_app.login()
    # The API user's generation is not the admin's: the socket refuses a stranger...
    with (pytest.raises(websockets.exceptions.InvalidStatus),
          ws_client.connect(live_app.ws_url(gen["id"]), additional_headers=live_app.ws_headers(session)) as sock):
        sock.recv(timeout=5)
    # ...and its owner, joining after the end, replays every token from the stream.
    live_app.manage("shell", "-c", "from django.contrib.auth.models import User; "
                    "u=User.objects.get(username='api-user'); u.set_password('api-user-pass-9'); u.save()")
    owner = live_app.login("api-user", "api-user-pass-9")
    url, headers = live_app.ws_url(gen["id"], json_frames=True), live_app.ws_headers(owner)
    with ws_client.connect(url, additional_headers=headers) as sock:
        events = _read_until_terminal(sock)
    tokens = "".join(e["text"] for e in events if e["type"] == "token")
    assert events[-1]["type"] == "done" and tokens == stored["text"] == events[-1]["text"]


def _read_until_terminal(sock, timeout=240):
    events, deadline = [], time.time() + timeout
    while time.time() < deadline:
        event = json.loads(sock.recv(timeout=deadline - time.time()))
        events.append(event)
        if event["type"] in ("done", "failed", "cancelled"):
            return events
    raise AssertionError("no terminal event")


@pytest.mark.parametrize("slug", ["gemma-3-270m", "gemma-3-270m-llamacpp"])
def test_the_packaged_gemma_base_model_serves_too(live_app, token, slug):
    """On both engines the base model continues the plain prompt (no chat template: given one,
    it answered blank lines)."""
    response = live_app.api(token, "post", "/api/v1/generations", json={
        "model": slug, "prompt": "Question: What is the capital of France?\nAnswer:",
        "params": {"temperature": 0, "max_new_tokens": 16, "stop": ["\n"]},
    })
    body = live_app.wait_generation(token, response.json()["id"], timeout=400)
    assert body["status"] == "done", body
    # A base model goes on to ask itself the next question: the stop sequence ends it first.
    assert body["text"].strip() == "Paris" and body["finish_reason"] == "stop_sequence"


def test_the_speculative_variant_matches_the_plain_models_greedy_answer(live_app, token):
    """The same prompt, greedy, on SmolLM2 and on its prompt-lookup speculative variant."""
    prompt = ("Repeat this sentence exactly: The quick brown fox jumps over the lazy dog "
              "while the cat watches from the warm windowsill.")
    answers = {}
    for slug in ("smollm2-135m", "smollm2-135m-spec"):
        response = live_app.api(token, "post", "/api/v1/generations", json={
            "model": slug, "prompt": prompt, "params": {"temperature": 0, "max_new_tokens": 40}})
        body = live_app.wait_generation(token, response.json()["id"], timeout=300)
        assert body["status"] == "done", body
        answers[slug] = body
    assert answers["smollm2-135m-spec"]["text"] == answers["smollm2-135m"]["text"]
    assert answers["smollm2-135m"]["text"]
    rate = answers["smollm2-135m-spec"]["request_metrics"]["spec_acceptance_rate"]
    assert 0 < rate <= 1
