"""What the pages say of an answer's end and of its time, in a real Chromium on the packaged models:
an answer cut at max_new_tokens says so ("Stopped at 8 tokens", not a green "Done"), and a cold start
(a catalogue entry no worker serves yet) shows its model load apart, with a time to first token
counted from when the worker began: below the load, where it used to include it. The same for the
first match of a tournament, in its reveal."""

import re

import pytest

from .artefacts import DESKTOP, PHONE, screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow]
LONG_PROMPT = "Write a long story about a dragon who learns to bake bread."
SECONDS = re.compile(r"(\d+\.\d\d) s")


def fresh_entries(live_app, *slugs: str) -> None:
    """Catalogue entries no worker serves yet (so their first answer starts cold): copies of SmolLM2 on
    llama.cpp, the fastest packaged entry to load and to run."""
    for i, slug in enumerate(slugs, start=1):
        live_app.manage("shell", "-c", (
            "from arena.catalogue.models import ModelEntry as M; e = M.objects.get(slug='smollm2-135m-llamacpp'); "
            f"M.objects.filter(slug={slug!r}).exists() or M.objects.create(slug={slug!r}, "
            f"name='SmolLM2 135M, llama.cpp, timing copy {i}', source=e.source, gguf_file=e.gguf_file, "
            "engine=e.engine, kind=e.kind, memory_estimate_mb=e.memory_estimate_mb, default_params=e.default_params)"))


def seconds(text: str) -> float:
    found = SECONDS.fullmatch(text.strip())
    assert found, text
    return float(found.group(1))


def test_a_cut_cold_answer_says_the_cut_and_shows_its_load_apart(page, live_app):
    slug = "timing-cold-playground"
    fresh_entries(live_app, slug)
    # A user of its own: the shared app's admin may have a blind verdict pending (another test's
    # anonymous battle), and then every load figure of theirs is withheld until the reveal.
    user = "timings-playground"
    live_app.log_in_page(page, username=user, password=live_app.user(user))
    page.select_option("#id_model", slug)
    page.fill("#id_prompt", LONG_PROMPT)
    page.fill("#id_temperature", "0.7")
    page.fill("#id_max_new_tokens", "8")
    page.click("#playground-form button[type=submit]")
    page.wait_for_selector("#gen-status[data-state=done]", timeout=240_000)
    # Live, without a reload: the cut, and the load beside a time to first token that leaves it out.
    assert page.get_attribute("#gen-status", "data-finish") == "length"
    assert page.text_content("#gen-status").strip() == "Stopped at 8 tokens"
    page.wait_for_selector("#gen-metrics [data-metric=load]")
    load, ttft = seconds(page.text_content("#gen-metrics [data-metric=load]")), seconds(
        page.text_content("#gen-metrics [data-metric=ttft]"))
    assert ttft < load, (ttft, load)

    gen_id = page.get_attribute("#generation", "data-generation")
    page.goto(live_app.url + f"g/{gen_id}/")  # the permalink, as stored
    assert page.text_content("#gen-status").strip() == "Stopped at 8 tokens"
    assert seconds(page.text_content("[data-metric=load]")) == load
    assert seconds(page.text_content("[data-metric=ttft]")) == ttft
    for name, size in (("generation-cut-cold-desktop", DESKTOP), ("generation-cut-cold-phone", PHONE)):
        page.set_viewport_size(size)
        screenshot(page, name)
    page.set_viewport_size(DESKTOP)

    body = live_app.api(live_app.token(user), "get", f"/api/v1/generations/{gen_id}").json()
    assert body["finish_reason"] == "length" and body["metrics"]["generated_tokens"] == 8
    assert body["metrics"]["time_to_first_token_s"] < body["metrics"]["load_wait_s"]


def test_a_tournaments_cold_first_match_shows_its_load_apart_in_the_reveal(browser, live_app):
    # A page of its own, logged in here: this test must not depend on another having logged in first.
    page = browser.new_context(viewport=DESKTOP).new_page()
    page.set_default_timeout(30_000)
    live_app.log_in_page(page)
    slugs = ["timing-t1", "timing-t2", "timing-t3", "timing-t4"]
    fresh_entries(live_app, *slugs)
    token = live_app.token("admin")
    created = live_app.api(token, "post", "/api/v1/tournaments", json={
        "contestants": slugs, "prompt": LONG_PROMPT, "seeding": "given",
        "params": {"temperature": 0.7, "max_new_tokens": 8}})
    assert created.status_code == 201, created.text
    tournament_id = created.json()["id"]
    for _ in range(3):
        body = wait_for_current_match_answered(live_app, token, tournament_id)
        picked = live_app.api(token, "post", f"/api/v1/tournaments/{tournament_id}/winner",
                              json={"match": body["current_match"], "winner": "left"})
        assert picked.status_code == 200, picked.text

    page.goto(live_app.url + f"tournaments/{tournament_id}/")
    page.wait_for_selector("#reveal")
    first = page.locator('#reveal tbody[data-match="1"]')
    loads = [seconds(t) for t in first.locator("[data-metric=load]").all_text_contents()]
    ttfts = [seconds(t) for t in first.locator("[data-metric=ttft]").all_text_contents()]
    assert len(loads) == len(ttfts) == 2 and all(t < ld for t, ld in zip(ttfts, loads, strict=True)), (ttfts, loads)
    assert first.locator("[data-metric=queue]").count() == 2
    ended = first.locator("td[data-finish]").all_text_contents()
    assert all(text in ("Done", "Stopped at 8 tokens", "Stopped at a stop sequence") for text in ended), ended
    for name, size in (("tournament-reveal-desktop", DESKTOP), ("tournament-reveal-phone", PHONE)):
        page.set_viewport_size(size)
        page.locator("#reveal").scroll_into_view_if_needed()
        screenshot(page, name)
    page.set_viewport_size(DESKTOP)


def wait_for_current_match_answered(live_app, token: str, tournament_id: str, timeout: float = 300) -> dict:
    """The tournament once both sides of its current match show as ended (paced: as the page shows them)."""
    import time

    deadline = time.time() + timeout
    while time.time() < deadline:
        body = live_app.api(token, "get", f"/api/v1/tournaments/{tournament_id}").json()
        match = next(m for m in body["matches"] if m["id"] == body["current_match"])
        sides = [match["battle"][s]["status"] for s in ("left", "right")] if match.get("battle") else []
        assert "failed" not in sides, match
        if sides and all(s == "done" for s in sides):
            return body
        time.sleep(0.5)
    raise AssertionError(f"tournament {tournament_id}'s current match never finished")
