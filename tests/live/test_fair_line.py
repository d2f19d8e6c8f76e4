"""The fair line, end to end: an application allowed one generation at a time (as `make run`
starts it, with ARENA_MAX_CONCURRENT_GENERATIONS=1) and two users of its API. The one who sent
three requests first does not keep the slot: the other's single request goes second, and
while it waits its stream says its place in line."""

import time

import pytest

from harness.app import running_app

pytestmark = [pytest.mark.live, pytest.mark.slow, pytest.mark.timeout(600)]
PARAMS = {"temperature": 0, "max_new_tokens": 16}


@pytest.fixture(scope="module")
def app(redis_url, tmp_path_factory):
    with running_app(redis_url, tmp_path_factory.mktemp("fair-line-app"), ARENA_MAX_CONCURRENT_GENERATIONS="1") as app:
        yield app


def send(app, token: str, prompt: str) -> str:
    response = app.api(token, "post", "/api/v1/generations",
                       json={"model": "smollm2-135m", "prompt": prompt, "params": PARAMS})
    assert response.status_code == 202, response.text
    return response.json()["id"]


def queued_places(app, gen_id: str) -> list[int]:
    events = app.redis.xrange(f"{app.prefix}:gen:{gen_id}:events")
    return [int(f[b"data"].split(b'"position": ')[1].split(b",")[0]) for _id, f in events if f[b"type"] == b"queued"]


def test_two_users_take_turns_for_one_slot(app):
    ann, bob = app.token("ann"), app.token("bob")
    anns = [send(app, ann, f"Name a colour, number {i}.") for i in range(3)]
    time.sleep(0.5)  # bob's request comes after all of ann's
    bobs = send(app, bob, "Name a fruit.")
    finished = {gen_id: app.wait_generation(token, gen_id)
                for token, ids in ((ann, anns), (bob, [bobs])) for gen_id in ids}
    assert all(body["status"] == "done" for body in finished.values()), finished
    order = sorted(finished, key=lambda gen_id: finished[gen_id]["finished_at"])
    assert order == [anns[0], bobs, anns[1], anns[2]]  # one slot: the order they ran in
    assert queued_places(app, bobs)[0] == 1  # told at once it was next, though ann had sent two before it
    assert queued_places(app, anns[2])[:2] == [2, 3]  # 2nd behind ann's own, then 3rd once bob came
