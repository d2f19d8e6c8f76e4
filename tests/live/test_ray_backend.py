"""The whole application as `make run` starts it (arena.launcher: uvicorn, Celery, the orchestrator),
with ARENA_ORCHESTRATOR_BACKEND=ray and RAY_ADDRESS naming a real Ray cluster this module starts
(harness/ray_cluster.py: raylets on 127.0.0.1, token authentication on): a user compares two
packaged llama.cpp models in a headless Chromium, both answers reach the browser over its
WebSocket to their end and are stored, and the staff status API shows the Ray node the two
workers run on. The orchestrator is a Ray driver (the token file in its environment); the worker
node has REDIS_URL and the app's ARENA_REDIS_PREFIX in its own environment, never through Ray.
"""

from __future__ import annotations

import html
import re
import uuid

import pytest

from harness.app import ARGS, CHROMIUM, running_app
from harness.ray_cluster import RayNodes, ray_env, set_ray_env

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]

NODE = "arena-gpu-box"  # the worker node's name, as Ray reports it (the head holds no resources)
LEFT, RIGHT = "smollm2-135m-llamacpp", "smollm2-135m-llamacpp-spec"  # 400 MB and 2 CPUs each
NODE_MB, NODE_CPUS = 1000.0, 4.0  # room for both, with nothing to spare for a third
SIDES = ("left", "right")
TOKEN_FRAGMENT = re.compile(r'<div id="(left|right)-output" hx-swap-oob="beforeend">(.*?)</div>', re.DOTALL)
DONE_STATUS = re.compile(r'<div id="(left|right)-status" class="status [^"]*" data-state="done"')


@pytest.fixture(scope="module")
def ray_app(tmp_path_factory, redis_url):
    """A Ray cluster (a head and one worker node), then the app on it; on the way out the app
    stops first (its orchestrator ends its workers' actors), then the cluster."""
    prefix = f"arena-live-{uuid.uuid4().hex[:8]}"
    data_dir = tmp_path_factory.mktemp("ray-live-app")
    # One token file per test process (harness/ray_cluster.py: a process's Ray keeps the token it first read).
    folder = tmp_path_factory.getbasetemp()
    with pytest.MonkeyPatch.context() as monkeypatch:
        set_ray_env(monkeypatch, folder)  # this process starts the head
        nodes = RayNodes({"REDIS_URL": redis_url, "ARENA_REDIS_PREFIX": prefix,
                          "ARENA_WORKER_LOG_DIR": str(data_dir / "ray-workers")})
        try:
            nodes.add(NODE, memory_mb=NODE_MB, cpus=NODE_CPUS)
            with running_app(redis_url, data_dir, ARENA_REDIS_PREFIX=prefix, ARENA_ORCHESTRATOR_BACKEND="ray",
                             RAY_ADDRESS=nodes.address, **ray_env(folder)) as app:
                yield app
        finally:
            nodes.shutdown()


@pytest.fixture(scope="module")
def page(ray_app):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
        page.set_default_timeout(30_000)
        yield page
        browser.close()


def record_frames(page) -> list[str]:
    """Every text frame the page's WebSockets receive, in order."""
    frames: list[str] = []

    def on_socket(ws):
        ws.on("framereceived", lambda payload: frames.append(
            payload if isinstance(payload, str) else payload.decode(errors="replace")))

    page.on("websocket", on_socket)
    return frames


def test_a_comparison_served_by_workers_on_a_ray_node_streams_both_answers_to_the_browser(ray_app, page):
    ray_app.log_in_page(page)
    frames = record_frames(page)
    page.goto(ray_app.url + "compare/")
    page.select_option("#id_left_model", LEFT)
    page.select_option("#id_right_model", RIGHT)
    page.fill("#id_prompt", "Name three colours of the rainbow.")
    page.click("details.params summary")
    page.fill("#id_temperature", "0")
    page.fill("#id_max_new_tokens", "24")
    page.click("#compare-form button[type=submit]")
    page.wait_for_url("**/b/*/")
    battle_id = page.url.rstrip("/").split("/")[-1]
    try:
        for side in SIDES:
            page.wait_for_selector(f"#{side}-status[data-state=done]", timeout=150_000)
    except Exception as exc:
        raise AssertionError(f"{exc}\n--- launcher log ---\n{_log_tail(ray_app)}") from exc

    token = ray_app.token("admin")
    stored = ray_app.api(token, "get", f"/api/v1/comparisons/{battle_id}").json()
    assert stored["finished"], stored
    # The socket's frames carried each answer to its end: its tokens, in order, are the stored
    # answer, and a status frame said it was done.
    streamed = dict.fromkeys(SIDES, "")
    done = set()
    for frame in frames:
        for side, text in TOKEN_FRAGMENT.findall(frame):
            streamed[side] += html.unescape(text)
        done.update(DONE_STATUS.findall(frame))
    for side, slug in zip(SIDES, (LEFT, RIGHT), strict=True):
        answer = stored[side]
        assert answer["model"] == slug and answer["status"] == "done", answer
        assert answer["text"].strip() and answer["metrics"]["generated_tokens"] > 0, answer
        assert streamed[side] == answer["text"], (side, streamed[side], answer["text"])
    assert done == set(SIDES), done

    # The staff status API: the Ray node by its name, what Ray says it has and holds, both workers on it.
    status = ray_app.api(token, "get", "/api/v1/workers").json()
    assert status["orchestrator_running"], status
    nodes = {node["name"]: node for node in status["nodes"]}
    node = nodes[NODE]
    assert node["alive"] and node["reason"] == "", node
    assert node["resources"] == {"cpus": NODE_CPUS, "gpus": 0.0, "memory_mb": NODE_MB}, node
    assert node["in_use"] == {"cpus": 4.0, "gpus": 0.0, "memory_mb": 800.0}, node  # 2 CPUs and 400 MB each
    workers = {worker["slug"]: worker for worker in status["workers"]}
    assert set(workers) == {LEFT, RIGHT}, workers
    for worker in workers.values():
        assert worker["node"] == node["node"] and worker["node_name"] == NODE, worker
        assert worker["state"] == "ready", worker


def _log_tail(app, chars: int = 4000) -> str:
    return (app.data_dir / "launcher.log").read_text(errors="replace")[-chars:]
