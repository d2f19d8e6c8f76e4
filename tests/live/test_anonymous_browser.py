"""An anonymous battle in a real headless Chromium (Debian's) on the packaged llama.cpp models:
a prompt, both answers stream (paced, blind), and until the vote nothing the browser receives
(HTTP bodies, WebSocket frames, titles) nor the API names a contestant or shows a speed; then the
vote reveals the names, the speeds and why the pair was drawn."""

import re
import time

import pytest

from .artefacts import DESKTOP, PHONE, screenshot
from .tournament import identifiers

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow]
PAIR = ("smollm2-135m-llamacpp", "gemma-3-270m-llamacpp")  # fast to start and to run
PROMPT = "Write two sentences about a lighthouse."
SPEED = re.compile(r"tok(en)?s?\s*/\s*s|tokens per second|data-metric=\"(tps|ttft)\"", re.IGNORECASE)


def exclude_all_but(live_app, keep) -> None:
    """Only `keep` in the draw; its base model (Gemma) let into chat draws, as staff may."""
    live_app.manage("shell", "-c", (
        "from arena.battles.models import ArenaExclusion as X; from arena.catalogue.models import ModelEntry as M; "
        f"[X.objects.get_or_create(model=m) for m in M.objects.exclude(slug__in={list(keep)!r})]; "
        f"M.objects.filter(slug__in={list(keep)!r}, base=True).update(in_chat_draws=True)"))


def set_defaults(live_app, defaults: dict) -> None:
    live_app.manage("shell", "-c", (
        "from arena.catalogue.models import ModelEntry as M\n"
        f"for slug, params in {defaults!r}.items(): M.objects.filter(slug=slug).update(default_params=params)"))


def test_an_anonymous_battle_names_nobody_until_the_vote(browser, live_app):
    exclude_all_but(live_app, PAIR)
    secret = identifiers(live_app)
    token = live_app.token("admin")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    http, frames = [], []
    recording = {"on": False}

    def on_response(response):
        if recording["on"]:
            try:
                body = response.body()
            except Exception:  # a redirect has no body
                body = b""
            http.append((response.url, body.decode("utf-8", "replace")))

    context.on("response", on_response)
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: recording["on"] and frames.append(
        payload if isinstance(payload, str) else payload.decode("utf-8", "replace"))))
    try:
        live_app.log_in_page(page, "arena/")
        page.fill("#id_prompt", PROMPT)
        page.click("details.params summary")
        page.fill("#id_max_new_tokens", "32")
        recording["on"] = True
        started = time.time()
        with page.expect_navigation():
            page.click("#arena-form button[type=submit]")
        battle_id = page.url.rstrip("/").split("/")[-1]
        titles = [page.title()]
        page.wait_for_selector("#left-status[data-state=done]", timeout=300_000)
        page.wait_for_selector("#right-status[data-state=done]", timeout=300_000)
        elapsed = time.time() - started
        titles.append(page.title())
        assert page.text_content("#left-output").strip() and page.text_content("#right-output").strip()
        assert page.text_content("article[data-side=left] .side-name") == "Model A"
        assert any('id="left-output" hx-swap-oob="beforeend"' in f for f in frames)  # it streamed
        assert any('id="right-output" hx-swap-oob="beforeend"' in f for f in frames)
        page.wait_for_selector("#vote-buttons button[value=right]:not([disabled])")
        body = live_app.api(token, "get", f"/api/v1/arena/{battle_id}").json()
        api_text = str(body)
        for name, size in (("arena-judging-desktop", DESKTOP), ("arena-judging-phone", PHONE)):
            page.set_viewport_size(size)
            screenshot(page, name)
        page.set_viewport_size(DESKTOP)
        recording["on"] = False

        received = [*http, *(("ws", f) for f in frames), ("api", api_text), *(("title", t) for t in titles)]
        assert http and frames
        for where, text in received:
            lowered = text.lower()
            for word in secret:
                assert word.lower() not in lowered, f"{word!r} reached the browser before the vote in {where}"
            if "/static/" not in where:
                assert not SPEED.search(text), f"a speed reached the browser before the vote in {where}"
        assert body["pick_reason"] is None and "model" not in body["left"] and body["can_vote"]

        with page.expect_navigation():
            page.click("#vote-buttons button[value=right]")
        page.wait_for_selector("#pick-reason")
        names = {page.text_content(f"article[data-side={s}] .side-name").strip() for s in ("left", "right")}
        revealed = live_app.api(token, "get", f"/api/v1/arena/{battle_id}").json()
        assert {revealed["left"]["model"], revealed["right"]["model"]} == set(PAIR)
        assert "Model A" not in names and len(names) == 2
        assert page.text_content("#pick-reason").strip().startswith("Why this pair: The app ")
        assert page.text_content("#verdict").strip().endswith("is better.")
        tps = [t.strip() for t in page.locator("[data-metric=tps]").all_text_contents()]
        assert len(tps) == 2 and all(re.fullmatch(r"\d+\.\d", t) for t in tps), tps
        for name, size in (("arena-revealed-desktop", DESKTOP), ("arena-revealed-phone", PHONE)):
            page.set_viewport_size(size)
            screenshot(page, name)
        print(f"\nanonymous battle {revealed['left']['model']} vs {revealed['right']['model']} "
              f"({revealed['pick_reason']}): both answers in {elapsed:.1f} s; {len(http)} HTTP responses and "
              f"{len(frames)} WebSocket frames checked before the vote; speeds {tps}")
    finally:
        context.close()
        live_app.manage("shell", "-c", "from arena.battles.models import ArenaExclusion as X; X.objects.all().delete()")


def test_both_sides_get_one_token_limit_whatever_their_defaults(browser, live_app):
    """Defaults that differ (SmolLM2 24 tokens, Gemma 8 and a stop at a newline) and no limit asked:
    both sides get the battle's one limit (ARENA_BLIND_MAX_NEW_TOKENS, 256) and no stop sequence,
    the page says so before the vote, and after it each side's status reads alike and names the form
    its prompt was given in."""
    exclude_all_but(live_app, PAIR)
    own = {PAIR[0]: {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 24},
           PAIR[1]: {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 8, "stop": ["\n"]}}
    set_defaults(live_app, own)
    token = live_app.token("admin")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(30_000)
    try:
        live_app.log_in_page(page, "arena/")
        assert "or 256 tokens if you leave it empty" in page.text_content("#limit-hint")
        page.fill("#id_prompt", "Write one sentence about a lighthouse.")
        with page.expect_navigation():
            page.click("#arena-form button[type=submit]")
        battle_id = page.url.rstrip("/").split("/")[-1]
        assert page.text_content("#token-limit").strip() == "Both answers are limited to 256 tokens."
        assert page.locator("#prompt-forms").count() == 0  # the forms would name a base model: after the vote
        page.wait_for_selector("#left-status[data-state=done]", timeout=300_000)
        page.wait_for_selector("#right-status[data-state=done]", timeout=300_000)
        for name, size in (("arena-limit-desktop", DESKTOP), ("arena-limit-phone", PHONE)):
            page.set_viewport_size(size)
            screenshot(page, name)
        page.set_viewport_size(DESKTOP)
        page.wait_for_selector("#vote-buttons button[value=left]:not([disabled])")
        with page.expect_navigation():
            page.click("#vote-buttons button[value=left]")
        page.wait_for_selector("#pick-reason")
        revealed = live_app.api(token, "get", f"/api/v1/arena/{battle_id}").json()
        sides = [revealed["left"], revealed["right"]]
        assert [s["params"]["max_new_tokens"] for s in sides] == [256, 256] and revealed["max_new_tokens"] == 256
        assert [s["params"]["stop"] for s in sides] == [[], []]
        statuses = [page.text_content(f"#{side}-status").strip() for side in ("left", "right")]
        assert all(s in ("Done", "Stopped at 256 tokens") for s in statuses), statuses  # never 8 or 24
        forms = page.text_content("#prompt-forms")
        assert "chat template" in forms and "plain text to continue (base model)" in forms
        for name, size in (("arena-limit-revealed-desktop", DESKTOP), ("arena-limit-revealed-phone", PHONE)):
            page.set_viewport_size(size)
            screenshot(page, name)
        print(f"\none limit: both sides 256 tokens (defaults 24 and 8); statuses {statuses}; "
              f"answers of {[s['metrics']['generated_tokens'] for s in sides]} tokens")
    finally:
        context.close()
        set_defaults(live_app, {slug: {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 128 if "gemma" in slug
                                       else 256} for slug in PAIR})
        live_app.manage("shell", "-c", "from arena.battles.models import ArenaExclusion as X; X.objects.all().delete()")
