"""Faults, each injected into the running application with real processes."""

import json
import os
import signal
import time

import pytest
import websockets.sync.client as ws_client

pytestmark = [pytest.mark.live, pytest.mark.slow]
LONG = {"temperature": 0.8, "max_new_tokens": 600, "seed": 1}


@pytest.fixture(scope="module")
def admin_token(live_app):
    return live_app.token("admin")


def start(live_app, token, prompt="Write a long story about a dragon who learns to bake.", params=LONG,
          model="smollm2-135m"):
    body = {"model": model, "prompt": prompt, "params": params}
    response = live_app.api(token, "post", "/api/v1/generations", json=body)
    assert response.status_code == 202, response.text
    return response.json()["id"]


def test_a_worker_killed_mid_stream_fails_the_generation_and_the_next_request_respawns(live_app, admin_token):
    gen_id = start(live_app, admin_token)
    live_app.wait_tokens(gen_id)
    pid = live_app.worker_pid("smollm2-135m")  # other tests of the session may have left other models loaded
    os.kill(pid, signal.SIGKILL)
    killed_at = time.time()
    body = live_app.wait_generation(admin_token, gen_id, timeout=30)
    assert body["status"] == "failed" and "signal 9" in body["failure_reason"], body
    assert time.time() - killed_at < 8
    assert body["text"]  # the partial answer is kept
    again = live_app.wait_generation(admin_token, start(live_app, admin_token, "Say hi.", {"max_new_tokens": 8}))
    assert again["status"] == "done" and again["text"]
    assert pid not in live_app.worker_pids().values()


def test_a_model_that_fails_to_load_gives_a_readable_reason(live_app, admin_token, tmp_path):
    (tmp_path / "config.json").write_text("{}")  # a folder that exists but holds no model
    live_app.manage("shell", "-c", "from arena.catalogue.models import ModelEntry; "
                    f"ModelEntry.objects.create(slug='broken', name='Broken', source={str(tmp_path)!r})")
    body = live_app.wait_generation(admin_token, start(live_app, admin_token, "Hi", {"max_new_tokens": 4}, "broken"),
                                    timeout=120)
    assert body["status"] == "failed" and "load" in body["failure_reason"].lower(), body


def test_a_prompt_longer_than_the_context_is_refused_before_any_work(live_app, admin_token):
    live_app.manage("shell", "-c", "from arena.catalogue.models import ModelEntry; "
                    "e=ModelEntry.objects.get(slug='smollm2-135m'); e.pk=None; e.slug='smollm2-ctx64'; "
                    "e.name='SmolLM2 (64-token context)'; e.context_length=64; e.save()")
    body = live_app.wait_generation(admin_token, start(live_app, admin_token, "tell me " * 200, {}, "smollm2-ctx64"))
    assert body["status"] == "failed" and "64" in body["failure_reason"], body
    assert body["metrics"]["generated_tokens"] in (None, 0)


def test_stop_over_the_websocket_cancels_within_a_second_and_frees_the_worker(live_app, admin_token):
    session = live_app.login()
    gen_id = live_app.start_from_page(session, "Write a long poem about the sea.", **LONG)
    url, headers = live_app.ws_url(gen_id, json_frames=True), live_app.ws_headers(session)
    with ws_client.connect(url, additional_headers=headers) as sock:
        live_app.wait_tokens(gen_id)
        sock.send(json.dumps({"action": "stop"}))
        stopped_at = time.time()
        event = json.loads(sock.recv(timeout=10))
        while event["type"] not in ("done", "failed", "cancelled"):
            event = json.loads(sock.recv(timeout=10))
    assert event["type"] == "cancelled" and time.time() - stopped_at < 1.5
    body = live_app.wait_generation(admin_token, gen_id, timeout=10)
    assert body["status"] == "cancelled" and body["text"]
    assert _in_flight(live_app) == 0


def test_a_browser_that_disconnects_cancels_its_generation(live_app, admin_token):
    session = live_app.login()
    gen_id = live_app.start_from_page(session, "Write a long essay about mountains.", **LONG)
    with ws_client.connect(live_app.ws_url(gen_id), additional_headers=live_app.ws_headers(session)) as sock:
        live_app.wait_tokens(gen_id)
        sock.recv(timeout=10)
    left_at = time.time()
    body = live_app.wait_generation(admin_token, gen_id, timeout=20)
    assert body["status"] == "cancelled" and body["text"]
    assert time.time() - left_at < 1 + 3  # the grace (1 s here) plus the relay
    assert _in_flight(live_app) == 0


def _in_flight(live_app) -> int:
    time.sleep(0.3)
    total = 0
    for worker_id in live_app.worker_pids():
        total += int(live_app.redis.hget(f"{live_app.prefix}:worker:{worker_id}", "in_flight") or 0)
    return total


def test_a_worker_killed_mid_comparison_fails_its_side_only_and_a_rerun_completes(live_app, admin_token):
    body = {"left_model": "smollm2-135m", "right_model": "smollm2-135m-spec",
            "prompt": "Write a long story about a dragon who learns to bake.", "params": LONG,
            "right_params": {"max_new_tokens": 80}}  # the left side is still going when it is killed
    created = live_app.api(admin_token, "post", "/api/v1/comparisons", json=body)
    assert created.status_code == 202, created.text
    battle = created.json()
    gens = _battle_generation_ids(live_app, battle["id"])
    live_app.wait_tokens(gens["left"])
    os.kill(live_app.worker_pid("smollm2-135m"), signal.SIGKILL)
    deadline = time.time() + 240
    while time.time() < deadline:
        state = live_app.api(admin_token, "get", f"/api/v1/comparisons/{battle['id']}").json()
        if state["finished"]:
            break
        time.sleep(0.5)
    assert state["left"]["status"] == "failed" and "signal 9" in state["left"]["failure_reason"], state
    assert state["left"]["text"]  # the partial answer is kept
    assert state["right"]["status"] == "done" and state["right"]["text"], state  # the other side is not lost
    again = live_app.api(admin_token, "post", "/api/v1/comparisons", json={**body, "prompt": "Say hi.",
                                                                           "params": {"max_new_tokens": 8},
                                                                           "right_params": {}}).json()
    deadline = time.time() + 180
    while not (state := live_app.api(admin_token, "get", f"/api/v1/comparisons/{again['id']}").json())["finished"]:
        assert time.time() < deadline, state
        time.sleep(0.5)
    assert state["left"]["status"] == state["right"]["status"] == "done", state


def _battle_generation_ids(live_app, battle_id: str) -> dict[str, str]:
    out = live_app.manage("shell", "-c", "from arena.battles.models import Battle; "
                          f"b=Battle.objects.get(id='{battle_id}'); print(b.left_id, b.right_id)")
    left, right = out.split()[-2:]
    return {"left": left, "right": right}
