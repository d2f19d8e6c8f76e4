"""The engines through the whole running application: a llama.cpp entry probed by the staff
`test` action, and an openai entry pointing at this app's own /v1 (its key in an environment
variable the app was started with) serving a generation through POST /api/v1/generations
like any other entry. (A comparison of a transformers entry with a llama.cpp one runs in
Chromium in test_compare_browser.py; the admin page's Test button and a stored key in
test_catalogue_admin.py.)"""

import pytest

pytestmark = [pytest.mark.live, pytest.mark.slow]


@pytest.fixture(scope="module")
def staff_token(live_app):
    return live_app.manage("arena_token", "catalogue-ops", "--staff", "--create-service-account").splitlines()[-1]


def test_the_test_action_reports_a_llamacpp_entrys_speed(live_app, staff_token):
    response = live_app.api(staff_token, "post", "/api/v1/catalogue/smollm2-135m-llamacpp/test", timeout=180)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["ok"] and result["text"].strip(), result
    assert result["time_to_first_token_s"] > 0 and result["tokens_per_s"] > 0


def test_an_openai_entry_on_this_apps_own_v1_serves_a_generation(live_app, staff_token):
    live_app.register_token("admin", live_app.env["ARENA_ENDPOINT_KEY_LIVE_SELF"])
    entry = {"slug": "self-llamacpp", "name": "This arena's llama.cpp SmolLM2, over /v1", "engine": "openai",
             "base_url": live_app.url + "v1", "remote_model": "smollm2-135m-llamacpp",
             "api_key_env": "ARENA_ENDPOINT_KEY_LIVE_SELF", "max_concurrency": 4}
    created = live_app.api(staff_token, "post", "/api/v1/catalogue", json=entry)
    assert created.status_code == 201, created.text
    assert live_app.env["ARENA_ENDPOINT_KEY_LIVE_SELF"] not in created.text

    token = live_app.token("admin")
    started = live_app.api(token, "post", "/api/v1/generations", json={
        "model": "self-llamacpp", "prompt": "Name three colours.", "params": {"temperature": 0, "max_new_tokens": 24}})
    assert started.status_code == 202, started.text
    outer = live_app.wait_generation(token, started.json()["id"], timeout=180)
    assert outer["status"] == "done", outer
    assert outer["text"].strip() and outer["metrics"]["generated_tokens"] > 0
    assert outer["metrics"]["tokens_per_s"] > 0

    # The same answer as asking the llama.cpp entry directly: the endpoint engine adds nothing.
    direct = live_app.api(token, "post", "/api/v1/generations", json={
        "model": "smollm2-135m-llamacpp", "prompt": "Name three colours.",
        "params": {"temperature": 0, "max_new_tokens": 24}})
    inner = live_app.wait_generation(token, direct.json()["id"], timeout=180)
    assert inner["text"] == outer["text"]
