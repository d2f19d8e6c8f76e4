"""Helpers shared by the live tournament tests (real application, real models); no tests of its own."""

from __future__ import annotations

import json
import time
from pathlib import Path

from inference.sources import model_cache_root

# Seeds 1 and 4 meet in the first match (the one the fault tests break): two llama.cpp
# variants, fast to start and to run; seeds 2 and 3, the second match, run on transformers.
FIRST_MATCH = ("smollm2-135m-llamacpp", "gemma-3-270m-llamacpp")
BRIEF = {"slug": "smollm2-135m-brief", "name": "SmolLM2 135M Instruct, told to be brief",
         "system_prompt": "You answer in as few words as you can."}


def awq_cached() -> bool:
    """A finished AWQ quantisation in the model cache (its first one takes ~25 min on 2 cores)."""
    root = model_cache_root() / "awq"
    return root.is_dir() and any(p.is_dir() and not p.name.startswith(".") and (p / "config.json").is_file()
                                 for p in root.iterdir())


def contestant_slugs(live_app) -> list[str]:
    """Four packaged contestants in seed order: the two llama.cpp ones of FIRST_MATCH around
    SmolLM2 on transformers and the AWQ entry if its quantisation is cached, otherwise the
    packaged SmolLM2 under a system prompt of its own (a catalogue entry as DESIGN allows:
    "itself under another prompt")."""
    first, fourth = FIRST_MATCH
    if awq_cached():
        return [first, "smollm2-135m", "smollm2-135m-awq", fourth]
    live_app.manage("shell", "-c", (
        "from arena.catalogue.models import ModelEntry as M; e = M.objects.get(slug='smollm2-135m'); "
        f"M.objects.filter(slug={BRIEF['slug']!r}).exists() or M.objects.create(slug={BRIEF['slug']!r}, "
        f"name={BRIEF['name']!r}, system_prompt={BRIEF['system_prompt']!r}, source=e.source, "
        "gguf_file=e.gguf_file, kind=e.kind, memory_estimate_mb=e.memory_estimate_mb, "
        "default_params=e.default_params)"))
    return [first, "smollm2-135m", BRIEF["slug"], fourth]


def identifiers(live_app) -> list[str]:
    """Every catalogue slug, name, source (and its package name) and GGUF file name."""
    out = live_app.manage("shell", "-c", (
        "import json; from arena.catalogue.models import ModelEntry as M; "
        "print(json.dumps([[m.slug, m.name, m.source, m.gguf_file] for m in M.objects.all()]))"))
    words = set()
    for slug, name, source, gguf in json.loads(out.splitlines()[-1]):
        words |= {slug, name, source, gguf, Path(gguf).name if gguf else "", source.removeprefix("package:")}
    return sorted(w for w in words if w)


def wait_state(live_app, token: str, tournament_id: str, predicate, timeout: float = 600, what: str = ""):
    deadline = time.time() + timeout
    body = None
    while time.time() < deadline:
        body = live_app.api(token, "get", f"/api/v1/tournaments/{tournament_id}").json()
        if predicate(body):
            return body
        time.sleep(0.5)
    raise AssertionError(f"tournament never reached {what}: {json.dumps(body)[:2000]}")


def current(body: dict) -> dict:
    return next(m for m in body["matches"] if m["id"] == body["current_match"])


def sides_done(body: dict) -> bool:
    battle = current(body)["battle"]
    return bool(battle) and battle["left"]["status"] in ("done", "failed", "cancelled") and \
        battle["right"]["status"] in ("done", "failed", "cancelled")
