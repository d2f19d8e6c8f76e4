"""Blind tournaments and the pages that show what the orchestrator runs.

A staff user who judges their own tournament must not learn which contestant is playing
(or finished first) from the status page, its socket, GET /api/v1/workers, the worker admin
or /healthz: those show the contestants' workers only as one anonymous aggregate until the
reveal. Other staff, and the judge after the reveal, see every worker as before. The rule itself
is tested beside its code: tests/arena/battles/test_secrecy.py, tests/arena/tournaments/test_secrecy.py."""

import json
import time

import pytest
from channels.routing import URLRouter
from django.contrib.auth import get_user_model

from arena import streams
from arena.accounts.models import ApiToken
from arena.battles.secrecy import HIDDEN_LABEL, REDACTED
from arena.catalogue.models import ModelEntry
from arena.routing import websocket_urlpatterns
from arena.tournaments.actions import start_tournament
from arena.workers.models import DatabaseRecorder, WorkerProcess
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api
from tests.arena.factories import play_through
from tests.arena.socket_client import WebsocketCommunicator

pytestmark = pytest.mark.django_db

# Names no other entry contains, so "not in the page" means what it says.
CONTESTANTS = [("kestrel-7b", "Kestrel Seven"), ("osprey-3b", "Osprey Three"),
               ("harrier-1b", "Harrier One"), ("merlin-2b", "Merlin Two")]
BYSTANDER = ("sparrow-9b", "Sparrow Nine")


def entry(smollm, slug, name, **fields):
    return ModelEntry.objects.create(slug=slug, name=name, source=smollm.source, gguf_file=smollm.gguf_file, **fields)


@pytest.fixture
def judge(db):
    """A staff user (a superuser, so the admin lets them in) who runs a tournament."""
    return get_user_model().objects.create_superuser("judge", password="judge-pass-123")


@pytest.fixture
def contestants(smollm):
    return [entry(smollm, slug, name) for slug, name in CONTESTANTS]


@pytest.fixture
def bystander(smollm):
    return entry(smollm, *BYSTANDER)


@pytest.fixture
def tournament(judge, contestants):
    return start_tournament(judge, contestants=contestants, prompt="Name a colour.", seeding="given",
                            params={"temperature": 0.7, "max_new_tokens": 8})


@pytest.fixture
def workers(tournament, contestants, bystander):
    """Worker records for every model (each once ready, so each has a cold start) and an
    orchestrator snapshot in Redis: match 1's two contestants busy, the bystander too."""
    recorder, t0 = DatabaseRecorder(), time.time() - 30
    for model in [*contestants, bystander]:
        recorder.transition(f"{model.slug}-0001", model.slug, "starting", t0, node="local")
        recorder.transition(f"{model.slug}-0001", model.slug, "ready", t0 + 2, cold_start_s=2.0)
    evicted = f"{bystander.slug}-0002"  # an older worker that made room for a contestant, and says so
    recorder.transition(evicted, bystander.slug, "starting", t0 - 60)
    recorder.transition(evicted, bystander.slug, "stopping", t0,
                        reason=f"evicted to make room for {contestants[0].slug}")
    recorder.transition(evicted, bystander.slug, "stopped", t0 + 1)
    match = tournament.current_match()
    playing = [match.battle.left.model, match.battle.right.model, bystander]
    snapshot = {"at": time.time(), "nodes": [{"node": "local", "budget_mb": 4000, "reserved_mb": 1500}],
                "workers": [{"worker_id": f"{m.slug}-0001", "slug": m.slug, "node": "local", "state": "ready",
                             "reserved_mb": 500, "measured_mb": 480 + i, "in_flight": i + 1, "ready_at": t0 + 2,
                             "started_at": t0, "last_used": t0 + 20, "cold_start_s": 2.0}
                            for i, m in enumerate(playing)]}
    client, keys = streams.client(), streams.keys()
    client.set(keys.orchestrator_status(), json.dumps(snapshot))
    yield snapshot
    client.delete(keys.orchestrator_status())


def assert_hidden(text: str, contestants) -> None:
    for model in contestants:
        assert model.slug not in text and model.name not in text, model.slug


def assert_shown(text: str, contestants) -> None:
    for model in contestants:
        assert model.slug in text, model.slug


# --- /healthz --------------------------------------------------------------------------------
def test_anonymous_healthz_says_only_ok_per_check(client, workers, contestants, bystander):
    assert WorkerProcess.objects.filter(state="ready").count() == 5
    response = client.get("/healthz")
    body, text = response.json(), response.content.decode()
    assert response.status_code == 503 and body["status"] == "unavailable"  # no Celery worker here
    assert set(body) == {"status", "checks"}
    assert all(set(check) == {"ok"} for check in body["checks"].values()), body
    assert body["checks"]["inference_workers"] == {"ok": True}
    assert "-0001" not in text and bystander.slug not in text
    assert_hidden(text, contestants)


def test_staff_healthz_gives_details_but_not_their_own_contestants(client, admin_client, judge, workers,
                                                                   contestants, bystander):
    other = admin_client.get("/healthz").json()
    assert "error" in other["checks"]["celery"] and "ms" in other["checks"]["database"]
    assert {w["model"] for w in other["checks"]["inference_workers"]["workers"]} == {
        *(m.slug for m in contestants), bystander.slug}
    client.force_login(judge)
    response = client.get("/healthz")
    checks = response.json()["checks"]
    assert [w["model"] for w in checks["inference_workers"]["workers"]] == [bystander.slug]
    assert checks["inference_workers"]["hidden"] == {"label": HIDDEN_LABEL, "workers": 4}
    assert_hidden(response.content.decode(), contestants)


# --- the status page, its socket, the API, the admin ------------------------------------------
def test_the_status_page_hides_the_owners_contestants_until_the_reveal(client, admin_client, judge, tournament,
                                                                       workers, contestants, bystander):
    client.force_login(judge)
    page = client.get("/status/").content.decode()
    assert_hidden(page, contestants)
    assert f'data-worker="{bystander.slug}-0001"' in page and HIDDEN_LABEL in page
    assert 'data-hidden-workers="2"' in page and "<td>3</td>" in page  # 1 + 2 requests in flight, summed
    assert "1500 MB" not in page and "4000 MB" in page  # the budget, not the total: less the shown, the hidden
    assert_shown(admin_client.get("/status/").content.decode(), contestants)  # not theirs to judge
    play_through(tournament)
    page = client.get("/status/").content.decode()
    assert_shown(page, contestants)
    assert HIDDEN_LABEL not in page


@pytest.mark.django_db(transaction=True)
async def test_the_status_socket_hides_the_owners_contestants(judge, workers, contestants, bystander):
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), "/ws/status/")
    comm.scope["user"] = judge
    connected, _ = await comm.connect()
    assert connected
    frame = await comm.receive_from(timeout=5)
    await comm.disconnect()
    assert_hidden(frame, contestants)
    assert f'data-worker="{bystander.slug}-0001"' in frame and 'data-hidden-workers="2"' in frame


def test_the_workers_api_hides_the_owners_contestants(client, admin_user, judge, tournament, workers,
                                                      contestants, bystander):
    response = api(client, "get", "/api/v1/workers", ApiToken.issue(judge))
    body = response.json()
    assert_hidden(response.content.decode(), contestants)
    assert [w["slug"] for w in body["workers"]] == [bystander.slug]
    assert body["hidden"] == {"label": HIDDEN_LABEL, "workers": 2, "in_flight": 3}
    local = {"node": "local", "name": "local", "alive": True, "reason": "", "budget_mb": 4000,
             "resources": None, "in_use": None}
    assert body["nodes"] == [{**local, "reserved_mb": None, "used_pct": None, "spares": None}]
    other = api(client, "get", "/api/v1/workers", ApiToken.issue(admin_user)).json()
    assert len(other["workers"]) == 3 and other["hidden"] is None
    assert other["nodes"] == [{**local, "reserved_mb": 1500, "used_pct": 38, "spares": []}]
    play_through(tournament)
    body = api(client, "get", "/api/v1/workers", ApiToken.issue(judge)).json()
    assert len(body["workers"]) == 3 and body["hidden"] is None


def test_the_worker_admin_hides_the_owners_contestants(client, admin_client, judge, tournament, workers,
                                                       contestants, bystander):
    changelist = "/admin/orchestration/workerprocess/"
    client.force_login(judge)
    page = client.get(changelist).content.decode()
    assert_hidden(page, contestants)  # rows, slug filter, worker ids
    assert f"{bystander.slug}-0001" in page and HIDDEN_LABEL in page
    assert 'data-hidden-records="4"' in page and "2 running now, 3 requests in flight" in page
    hidden = WorkerProcess.objects.get(slug=contestants[0].slug)
    response = client.get(f"{changelist}{hidden.pk}/change/", follow=True)
    assert_hidden(response.content.decode(), contestants)  # "does not exist", back to the index
    assert client.get(f"{changelist}?slug={contestants[1].slug}").content.decode().count("-0001") == 0
    evicted = WorkerProcess.objects.get(worker_id=f"{bystander.slug}-0002")
    page = client.get(f"{changelist}{evicted.pk}/change/").content.decode()
    assert f"evicted to make room for {REDACTED}" in page
    assert_hidden(page, contestants)
    assert f"evicted to make room for {contestants[0].slug}" in admin_client.get(
        f"{changelist}{evicted.pk}/change/").content.decode()
    assert_shown(admin_client.get(changelist).content.decode(), contestants)
    play_through(tournament)
    page = client.get(changelist).content.decode()
    assert_shown(page, contestants)
    assert HIDDEN_LABEL not in page


# --- nodes as Ray reports them, and recent failures ---------------------------------------------
RAY_NODES = [
    {"node": "7e" * 28, "name": "10.0.0.7:41235", "alive": True, "reason": "", "budget_mb": 30000.0,
     "reserved_mb": 1500.0, "resources": {"cpus": 16.0, "gpus": 1.0, "memory_mb": 61440.0},
     "in_use": {"cpus": 6.25, "gpus": 0.75, "memory_mb": 9321.0}},
    {"node": "8f" * 28, "name": "10.0.0.8:40411", "alive": False, "reason": "received SIGTERM",
     "budget_mb": 12000.0, "reserved_mb": 0.0, "resources": {"cpus": 8.0, "gpus": 0.0, "memory_mb": 16384.0},
     "in_use": {"cpus": 0.0, "gpus": 0.0, "memory_mb": 0.0}},
]
IN_USE_SHOWN = ("6.25 in use", "0.75 in use", "9.1 GB in use")  # figures no other part of the page has


@pytest.fixture
def ray_nodes(workers):
    """The same workers, on two Ray nodes (the second lost) that say what is in use."""
    client, keys = streams.client(), streams.keys()
    client.set(keys.orchestrator_status(), json.dumps({**workers, "nodes": RAY_NODES}))
    return RAY_NODES


def test_the_workers_api_withholds_what_is_in_use_on_a_node_from_the_judge(client, admin_user, judge, tournament,
                                                                           ray_nodes, contestants):
    body = api(client, "get", "/api/v1/workers", ApiToken.issue(judge)).json()
    assert_conforms(body, "/api/v1/workers")
    for shown, published in zip(body["nodes"], ray_nodes, strict=True):
        assert (shown["in_use"], shown["reserved_mb"], shown["used_pct"]) == (None, None, None)
        assert {k: shown[k] for k in ("node", "name", "alive", "reason", "budget_mb", "resources")} == {
            k: published[k] for k in ("node", "name", "alive", "reason", "budget_mb", "resources")}
    other = api(client, "get", "/api/v1/workers", ApiToken.issue(admin_user)).json()
    assert [n["in_use"] for n in other["nodes"]] == [n["in_use"] for n in ray_nodes]
    assert [n["reserved_mb"] for n in other["nodes"]] == [1500.0, 0.0]
    play_through(tournament)
    body = api(client, "get", "/api/v1/workers", ApiToken.issue(judge)).json()
    assert body["nodes"][0]["in_use"] == ray_nodes[0]["in_use"] and body["nodes"][0]["reserved_mb"] == 1500.0


def test_the_status_page_withholds_what_is_in_use_on_a_node_from_the_judge(client, admin_client, judge, tournament,
                                                                           ray_nodes, contestants):
    client.force_login(judge)
    page = client.get("/status/").content.decode()
    for figure in IN_USE_SHOWN:
        assert figure not in page
    assert page.count("in use: hidden") == 3  # three resources of the live node (a lost one shows no use)
    assert "<td>16<span" in page and "<td>60.0 GB<span" in page  # the totals stay
    assert "<strong>lost</strong>: received SIGTERM" in page and "10.0.0.8:40411" in page
    assert "1.5 GB" not in page and "<td>29.3 GB</td>" in page  # not what is reserved; the budget
    staff_page = admin_client.get("/status/").content.decode()
    assert all(figure in staff_page for figure in IN_USE_SHOWN) and "in use: hidden" not in staff_page
    play_through(tournament)
    page = client.get("/status/").content.decode()
    assert all(figure in page for figure in IN_USE_SHOWN) and "in use: hidden" not in page


def test_recent_failures_leave_out_the_judges_contestants(client, admin_client, judge, tournament, workers,
                                                          contestants, bystander):
    recorder, t0 = DatabaseRecorder(), time.time()
    for model in contestants:  # more than the list holds: left out, they take no place in it
        for i in range(3):
            recorder.transition(f"{model.slug}-dead{i:04d}", model.slug, "starting", t0 - 50, node="local")
            recorder.transition(f"{model.slug}-dead{i:04d}", model.slug, "failed", t0 - 40 + i,
                                reason="Ray's out-of-memory monitor stopped the model worker.")
    recorder.transition(f"{bystander.slug}-dead0001", bystander.slug, "starting", t0 - 200, node="local")
    recorder.transition(f"{bystander.slug}-dead0001", bystander.slug, "failed", t0 - 100,
                        reason=f"The worker could not start beside {contestants[0].slug}.")
    client.force_login(judge)
    page = client.get("/status/").content.decode()
    assert_hidden(page, contestants)
    assert page.count("data-failed-worker=") == 1 and f'data-failed-worker="{bystander.slug}-dead0001"' in page
    assert f"could not start beside {REDACTED}." in page
    staff_page = admin_client.get("/status/").content.decode()
    assert staff_page.count("data-failed-worker=") == 10  # the last ten of thirteen
    assert f"could not start beside {contestants[0].slug}." not in staff_page  # the oldest of thirteen
    play_through(tournament)
    page = client.get("/status/").content.decode()
    assert page.count("data-failed-worker=") == 10 and f"{contestants[0].slug}-dead0002" in page
