"""The real `openai` Python client against the running application (/v1/), with the packaged
SmolLM2: models, completions streamed and not, errors, and a client that hangs up mid-stream."""

import time
import uuid

import openai
import pytest
import requests

pytestmark = [pytest.mark.live, pytest.mark.slow]
MODEL = "smollm2-135m"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


@pytest.fixture(scope="module")
def token(live_app):
    return live_app.token("openai-user")


@pytest.fixture(scope="module")
def client(live_app, token):
    # No retries: a retried request would be a second generation, and the tests count them.
    return openai.OpenAI(base_url=live_app.url + "v1", api_key=token, max_retries=0, timeout=300)


def generation_id(completion_id: str) -> str:
    assert completion_id.startswith("chatcmpl-")
    return str(uuid.UUID(completion_id.removeprefix("chatcmpl-")))


def test_models_lists_the_catalogue(client):
    ids = {model.id for model in client.models.list()}
    assert MODEL in ids and "gemma-3-270m" in ids
    assert client.models.retrieve(MODEL).owned_by == "llm-arena"


def test_a_completion_returns_the_answer_and_the_stored_generations_usage(live_app, client, token):
    completion = client.chat.completions.create(model=MODEL, messages=QUESTION, temperature=0, max_tokens=12)
    answer = completion.choices[0].message
    assert answer.role == "assistant" and "Paris" in answer.content
    assert completion.model == MODEL and completion.choices[0].finish_reason in ("stop", "length")
    stored = live_app.api(token, "get", f"/api/v1/generations/{generation_id(completion.id)}").json()
    assert stored["status"] == "done" and stored["text"] == answer.content
    usage = completion.usage
    assert usage.completion_tokens == stored["metrics"]["generated_tokens"] > 0
    assert usage.prompt_tokens == stored["metrics"]["prompt_tokens"] > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert stored["params"]["max_new_tokens"] == 12 and stored["params"]["temperature"] == 0


def test_a_streamed_completion_sends_the_same_tokens_that_are_stored(live_app, client, token):
    stream = client.chat.completions.create(model=MODEL, messages=QUESTION, temperature=0, max_tokens=12,
                                            stream=True, stream_options={"include_usage": True})
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason] in (
        ["stop"], ["length"])
    stored = live_app.api(token, "get", f"/api/v1/generations/{generation_id(chunks[0].id)}").json()
    assert stored["status"] == "done" and text == stored["text"] and "Paris" in text
    assert chunks[-1].usage.completion_tokens == stored["metrics"]["generated_tokens"]
    # Greedy: the same answer as the non-streaming request of the test before.
    again = client.chat.completions.create(model=MODEL, messages=QUESTION, temperature=0, max_tokens=12)
    assert again.choices[0].message.content == text


def test_the_raw_stream_is_server_sent_events_ending_with_done(live_app, token):
    response = requests.post(live_app.url + "v1/chat/completions", stream=True, timeout=120,
                             headers={"Authorization": f"Bearer {token}"},
                             json={"model": MODEL, "messages": QUESTION, "max_tokens": 4, "stream": True})
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/event-stream")
    assert response.headers["Cache-Control"] == "no-cache" and response.headers["X-Accel-Buffering"] == "no"
    raw = b"".join(response.iter_content(chunk_size=None)).decode()
    events = [e for e in raw.split("\n\n") if e]
    assert events[-1] == "data: [DONE]" and raw.endswith("data: [DONE]\n\n")
    assert all(e.startswith(("data: ", ": ")) for e in events)
    data = [e for e in events if e.startswith("data: ")]  # ": loading 1.0s" comments come first on a cold model
    assert '"object":"chat.completion.chunk"' in data[0]


def test_a_conversation_with_a_system_prompt_and_history_is_stored_as_such(live_app, client, token):
    messages = [{"role": "system", "content": "You are terse."},
                {"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "Blue."},
                {"role": "user", "content": [{"type": "text", "text": "Another one?"}]}]
    completion = client.chat.completions.create(model=MODEL, messages=messages, temperature=0, max_tokens=4)
    stored = live_app.api(token, "get", f"/api/v1/generations/{generation_id(completion.id)}").json()
    assert stored["status"] == "done" and stored["system_prompt"] == "You are terse."
    assert stored["prompt"] == "Another one?" and stored["text"] == completion.choices[0].message.content


def test_errors_are_the_clients_own_exceptions(live_app, client):
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="gpt-4o", messages=QUESTION)
    assert info.value.code == "model_not_found" and info.value.param == "model"
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=QUESTION, temperature=5)
    assert info.value.param == "temperature" and info.value.type == "invalid_request_error"
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=QUESTION, n=2)
    assert info.value.param == "n"
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=[{"role": "assistant", "content": "Hi"}])
    assert info.value.param == "messages[0].role"
    bad_key = openai.OpenAI(base_url=live_app.url + "v1", api_key="arena_not-a-token", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        bad_key.models.list()
    assert info.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        bad_key.chat.completions.create(model=MODEL, messages=QUESTION, stream=True)


def test_a_client_that_closes_the_stream_cancels_the_generation_and_frees_the_worker(live_app, client, token):
    stream = client.chat.completions.create(
        model=MODEL, stream=True, temperature=0.8, seed=1, max_tokens=400,
        messages=[{"role": "user", "content": "Write a long story about a dragon who learns to bake."}])
    received = ""
    for chunk in stream:
        received += chunk.choices[0].delta.content or ""
        if len(received) > 20:
            break
    gen_id = generation_id(chunk.id)
    stream.close()  # hang up mid-answer
    closed_at = time.time()
    body = live_app.wait_generation(token, gen_id, timeout=20)
    assert body["status"] == "cancelled", body
    assert time.time() - closed_at < 5
    assert body["text"].startswith(received) and body["metrics"]["generated_tokens"] < 400
    time.sleep(0.3)
    in_flight = sum(int(live_app.redis.hget(f"{live_app.prefix}:worker:{worker_id}", "in_flight") or 0)
                    for worker_id in live_app.worker_pids())
    assert in_flight == 0
