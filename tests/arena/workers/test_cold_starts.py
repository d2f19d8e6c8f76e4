"""The status page shows each variant's last cold start (start to ready, as the orchestrator records
it: labelled so), when it was, and the mean; and the spare workers each node keeps, with their memory."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.template.loader import render_to_string

from arena import streams
from arena.workers.models import DatabaseRecorder
from arena.workers.status import page_context

pytestmark = pytest.mark.django_db

NOW = 1_800_000_000.0  # 15 Jan 2027, 08:00:00 UTC


def started(worker_id: str, slug: str, ready_at: float, cold_s: float) -> None:
    recorder = DatabaseRecorder()
    recorder.transition(worker_id, slug, "starting", ready_at - cold_s)
    recorder.transition(worker_id, slug, "ready", ready_at, cold_start_s=cold_s)


def render(snapshot: dict) -> str:
    client, keys = streams.client(), streams.keys()
    client.set(keys.orchestrator_status(), json.dumps(snapshot))
    try:
        staff, _ = get_user_model().objects.get_or_create(username="staff", defaults={"is_staff": True})
        return render_to_string("workers/_status.html", page_context(staff, now=NOW))
    finally:
        client.delete(keys.orchestrator_status())


def test_each_variant_shows_its_last_cold_start_with_when_and_the_mean(smollm):
    started(f"{smollm.slug}-1", smollm.slug, NOW - 3600, 21.0)  # before spares: imports and all
    started(f"{smollm.slug}-2", smollm.slug, NOW - 60, 3.0)  # the last: started in a spare
    started("other-1", "other", NOW - 30, 1.2)
    html = render({"at": NOW, "nodes": [], "workers": []})
    row = html.split(f'<tr data-cold-start="{smollm.slug}">', 1)[1].split("</tr>", 1)[0]
    assert f">{smollm.name}</td>" in row
    assert '<td class="cold-start-last">3.0 s</td>' in row
    assert '<time datetime="2027-01-15T07:59:00+00:00">15 Jan 2027, 07:59:00</time>' in row
    assert "<td>2</td><td>12 s</td>" in row  # two starts, their mean
    assert '<td class="cold-start-last">1.2 s</td>' in html  # the other variant's own last
    assert "from the orchestrator starting a model's worker to the worker ready" in html


def test_a_nodes_spare_workers_are_listed_with_their_memory():
    node = {"node": "local", "name": "local", "alive": True, "reason": "", "budget_mb": 8000.0,
            "reserved_mb": 850.0, "resources": None, "in_use": None,
            "spares": [{"engine": "llamacpp", "memory_mb": 52}, {"engine": "transformers", "memory_mb": 798}]}
    html = render({"at": NOW, "nodes": [node], "workers": []})
    assert "Spare workers on local" in html and "llamacpp (52 MB), transformers (798 MB)." in html
    assert "Spare workers" not in render({"at": NOW, "nodes": [{**node, "spares": []}], "workers": []})
