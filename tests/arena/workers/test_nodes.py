"""The staff status page and GET /api/v1/workers show the nodes as the orchestrator's backend
reports them (issue 27: Ray's address, alive or lost and why, resources and their use), each
worker's node by name, and the workers that failed lately with what happened.

The snapshot is written into Redis here in the orchestrator's format (docs of the snapshot:
arena/workers/status.py); the blind rules for these fields are tested in test_secrecy.py."""

import json
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.template.loader import render_to_string

from arena import streams
from arena.accounts.models import ApiToken
from arena.workers.models import DatabaseRecorder
from arena.workers.status import page_context, recent_failures
from tests.arena.api.conformance import assert_conforms
from tests.arena.api_client import api

pytestmark = pytest.mark.django_db

NOW = 1_800_000_000.0  # 15 Jan 2027, 08:00:00 UTC
HEAD = "5f1e0c3a9b7d4e2f8a6c1b3d5e7f9a0b2c4d6e8f0a1b3c5d7e9f1a2b"  # Ray node ids: 56 hex digits
LOST = "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d"
GONE = "0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f"  # no longer listed


def ray_snapshot(slugs: list[str], at: float = NOW) -> dict:
    """Two Ray nodes, the second lost, and three workers: two on the head (one naming its
    node, one from before workers carried node_name), one on a node the snapshot no longer lists."""
    head = {"node": HEAD, "name": "10.0.0.7:41235", "alive": True, "reason": "", "budget_mb": 30000.0,
            "reserved_mb": 1500.0, "resources": {"cpus": 16.0, "gpus": 1.0, "memory_mb": 61440.0},
            "in_use": {"cpus": 6.5, "gpus": 0.5, "memory_mb": 9216.0}}
    lost = {"node": LOST, "name": "10.0.0.8:40411", "alive": False, "reason": "received SIGTERM",
            "budget_mb": 12000.0, "reserved_mb": 0.0, "resources": {"cpus": 8.0, "gpus": 0.0, "memory_mb": 16384.0},
            "in_use": {"cpus": 0.0, "gpus": 0.0, "memory_mb": 0.0}}
    common = {"estimate_mb": None, "measured_mb": None, "started_at": at - 90, "last_used": at - 5}
    workers = [
        {**common, "worker_id": f"{slugs[0]}-0001", "slug": slugs[0], "node": HEAD, "node_name": "10.0.0.7:41235",
         "state": "ready", "reserved_mb": 500, "in_flight": 1, "ready_at": at - 60, "cold_start_s": 4.0},
        {**common, "worker_id": f"{slugs[1]}-0001", "slug": slugs[1], "node": HEAD, "state": "starting",
         "reserved_mb": 1000, "in_flight": 0, "ready_at": None, "cold_start_s": None},
        {**common, "worker_id": f"{slugs[2]}-0001", "slug": slugs[2], "node": GONE, "node_name": "", "state": "ready",
         "reserved_mb": 700, "in_flight": 0, "ready_at": at - 30, "cold_start_s": 2.0},
    ]
    return {"at": at, "nodes": [head, lost], "workers": workers}


@pytest.fixture
def publish():
    client, keys = streams.client(), streams.keys()

    def write(snapshot: dict) -> None:
        client.set(keys.orchestrator_status(), json.dumps(snapshot))

    yield write
    client.delete(keys.orchestrator_status())


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user("staff", is_staff=True)


def rendered(user) -> str:
    return render_to_string("workers/_status.html", page_context(user, now=NOW))


def row(html: str, marker: str) -> str:
    """The <tr> that carries `marker` (an attribute such as data-node="...")."""
    start = html.index(marker)
    return html[html.rindex("<tr", 0, start):html.index("</tr>", start)]


def test_the_page_shows_each_node_as_ray_reports_it(catalogue, publish, staff):
    publish(ray_snapshot([e.slug for e in catalogue[:3]]))
    html = rendered(staff)
    head, lost = row(html, f'data-node="{HEAD}"'), row(html, f'data-node="{LOST}"')
    assert '>10.0.0.7:41235</td>' in head and f'title="Node {HEAD}"' in head
    assert 'data-alive="true"' in head and ">alive</td>" in head
    assert "<td>16<span class=\"in-use\">6.5 in use</span></td>" in head
    assert "<td>1<span class=\"in-use\">0.5 in use</span></td>" in head
    assert "<td>60.0 GB<span class=\"in-use\">9.0 GB in use</span></td>" in head  # in the total's unit
    assert "<td>1.5 GB</td>" in head and "<td>29.3 GB</td>" in head and 'value="5"' in head  # reserved, budget
    # a lost node says so in words (not by colour alone), with Ray's reason; its totals stay, no use
    assert 'data-alive="false"' in lost and "<strong>lost</strong>: received SIGTERM</td>" in lost
    assert ">10.0.0.8:40411</td>" in lost and "<td>8</td>" in lost and "<td>16.0 GB</td>" in lost
    assert "in use" not in lost and "<meter" not in lost


def test_each_worker_shows_its_nodes_name(catalogue, publish, staff):
    slugs = [e.slug for e in catalogue[:3]]
    publish(ray_snapshot(slugs))
    html = rendered(staff)
    on_head = f'<td class="node-name" title="Node {HEAD}">10.0.0.7:41235</td>'
    assert on_head in row(html, f'data-worker="{slugs[0]}-0001"')
    # a worker published without node_name gets its node's name from the snapshot's nodes
    assert on_head in row(html, f'data-worker="{slugs[1]}-0001"')
    # one whose node is no longer listed: the node id it has, cut as Ray's tools print ids
    assert f'<td class="node-name" title="Node {GONE}">{GONE[:12]}…</td>' in row(html, f'data-worker="{slugs[2]}-0001"')


def test_a_snapshot_without_the_ray_fields_still_renders(smollm, publish, staff):
    """The local backend before issue 27 published {"node", "budget_mb", "reserved_mb"} only,
    and live nodes only, and its workers no node_name."""
    publish({"at": NOW, "nodes": [{"node": "local", "budget_mb": 4000, "reserved_mb": 1000}],
             "workers": [{"worker_id": f"{smollm.slug}-0001", "slug": smollm.slug, "node": "local",
                          "state": "ready", "reserved_mb": 1000, "in_flight": 0}]})
    html = rendered(staff)
    node = row(html, 'data-node="local"')
    assert ">local</td>" in node and "title=" not in node and ">alive</td>" in node
    assert node.count("<td>–</td>") == 3  # CPUs, GPUs, memory: not reported
    assert "<td>1000 MB</td>" in node and "<td>4000 MB</td>" in node and 'value="25"' in node
    assert '<td class="node-name">local</td>' in row(html, f'data-worker="{smollm.slug}-0001"')


def test_the_api_gives_the_new_node_fields_and_each_workers_node_name(client, catalogue, publish, staff):
    slugs = [e.slug for e in catalogue[:3]]
    publish(ray_snapshot(slugs))
    response = api(client, "get", "/api/v1/workers", ApiToken.issue(staff))
    body = response.json()
    assert_conforms(body, "/api/v1/workers")
    head, lost = body["nodes"]
    assert head == {"node": HEAD, "name": "10.0.0.7:41235", "alive": True, "reason": "", "budget_mb": 30000.0,
                    "reserved_mb": 1500.0, "resources": {"cpus": 16.0, "gpus": 1.0, "memory_mb": 61440.0},
                    "in_use": {"cpus": 6.5, "gpus": 0.5, "memory_mb": 9216.0}, "used_pct": 5, "spares": []}
    assert (lost["alive"], lost["reason"], lost["name"]) == (False, "received SIGTERM", "10.0.0.8:40411")
    assert [(w["node"], w["node_name"]) for w in body["workers"]] == [
        (HEAD, "10.0.0.7:41235"), (HEAD, "10.0.0.7:41235"), (GONE, GONE)]


def test_the_api_reads_an_old_snapshot_with_nulls_where_it_says_nothing(client, publish, staff):
    publish({"at": NOW, "nodes": [{"node": "local", "budget_mb": None, "reserved_mb": 0}], "workers": []})
    body = api(client, "get", "/api/v1/workers", ApiToken.issue(staff)).json()
    assert_conforms(body, "/api/v1/workers")
    assert body["nodes"] == [{"node": "local", "name": "local", "alive": True, "reason": "", "budget_mb": None,
                              "reserved_mb": 0, "resources": None, "in_use": None, "used_pct": None,
                              "spares": []}]


# --- recent failures: what happened ----------------------------------------------------------
def fail(recorder, worker_id, slug, at, reason, node=HEAD):
    recorder.transition(worker_id, slug, "starting", at - 10, node=node)
    recorder.transition(worker_id, slug, "failed", at, reason=reason)


def test_recent_failures_say_what_happened_newest_first(catalogue, publish, staff):
    smollm, other = catalogue[0], catalogue[1]
    publish(ray_snapshot([e.slug for e in catalogue[:3]]))
    recorder = DatabaseRecorder()
    lost = "The machine serving this model was lost (Ray: node 10.0.0.8:40411 died: received SIGTERM)."
    oom = "Ray's out-of-memory monitor stopped the model worker: its machine ran short of memory."
    fail(recorder, f"{smollm.slug}-dead0001", smollm.slug, NOW - 120, lost, node=LOST)
    fail(recorder, f"{other.slug}-dead0002", other.slug, NOW - 60, oom, node=GONE)
    recorder.transition(f"{other.slug}-fine0003", other.slug, "starting", NOW - 50)
    recorder.transition(f"{other.slug}-fine0003", other.slug, "stopped", NOW - 40, reason="idle for 600 s")
    html = rendered(staff)
    assert "<h2>Recent failures</h2>" in html and "fine0003" not in html
    newest, older = row(html, "dead0002"), row(html, "dead0001")
    assert html.index("dead0002") < html.index("dead0001")
    assert '<time datetime="2027-01-15T07:59:00+00:00">15 Jan 2027, 07:59:00</time>' in newest
    assert f'class="failure-reason">{oom}</td>'.replace("'", "&#x27;") in newest
    assert f'title="{other.slug}">{other.name}</td>' in newest
    assert f'class="node-name" title="Node {GONE}">{GONE[:12]}…</td>' in newest  # not listed any more: its id
    assert f'class="node-name" title="Node {LOST}">10.0.0.8:40411</td>' in older and f">{lost}</td>" in older


def test_only_the_last_ten_failures_are_listed(smollm):
    recorder = DatabaseRecorder()
    for i in range(12):
        fail(recorder, f"{smollm.slug}-{i:08x}", smollm.slug, NOW + i, f"failure number {i}")
    failures = recent_failures()
    assert [f["reason"] for f in failures] == [f"failure number {i}" for i in range(11, 1, -1)]
    assert failures[0]["at"] == datetime.fromtimestamp(NOW + 11, tz=UTC)


def test_no_failure_no_heading(smollm, publish, staff):
    publish(ray_snapshot([smollm.slug] * 3))
    assert "Recent failures" not in rendered(staff)


@pytest.mark.parametrize(("value", "like", "shown"), [
    (500, None, "500 MB"), (10239, None, "10239 MB"), (10240, None, "10.0 GB"), (61440.0, None, "60.0 GB"),
    (1500, 30000, "1.5 GB"), (1500, 4000, "1500 MB"), (None, None, "–"),
])
def test_memory_reads_in_mb_or_gb_like_the_figure_beside_it(value, like, shown):
    from arena.workers.templatetags.worker_tags import megabytes

    assert megabytes(value, like) == shown


@pytest.mark.parametrize(("value", "shown"), [(8.0, "8"), (0.5, "0.5"), (2.25, "2.25"), (1 / 3, "0.33"), (None, "–")])
def test_cpus_and_gpus_read_without_trailing_zeros(value, shown):
    from arena.workers.templatetags.worker_tags import amount

    assert amount(value) == shown
