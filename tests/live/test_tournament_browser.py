"""A whole 4-model tournament in a real headless Chromium (Debian's), on the packaged models.

While it runs, every byte the browser receives before the reveal (HTTP bodies and
WebSocket frames) and every page title is recorded; none may name a contestant (slug,
name, source, GGUF file) or show a speed. Then the reveal must show them all."""

import re
import time

import pytest

from .artefacts import DESKTOP, PHONE, screenshot
from .tournament import contestant_slugs, identifiers

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow]
PROMPT = "Write a short poem about the sea."
SPEED = re.compile(r"tok(en)?s?\s*/\s*s|tokens per second|data-metric=\"(tps|ttft)\"", re.IGNORECASE)
FORM_BOUNDS = re.compile(r'\s(?:min|max|step)="[^"]*"')

# Sets window.__both once both answers have text while neither has finished: the two
# sides really stream at the same time (re-installed on every page load).
BOTH_STREAMING = """
window.__both = false;
new MutationObserver(() => {
  const el = id => document.getElementById(id);
  const lo = el('left-output'), ro = el('right-output'), ls = el('left-status'), rs = el('right-status');
  if (!lo || !ro || !ls || !rs) return;
  const live = s => !['done', 'failed', 'cancelled'].includes(s.dataset.state);
  if (lo.textContent.trim() && ro.textContent.trim() && live(ls) && live(rs)) window.__both = true;
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


class Recorder:
    """Everything the browser receives while `on` is true."""

    def __init__(self):
        self.on = False
        self.http: list[tuple[str, bytes]] = []
        self.frames: list[tuple[float, str]] = []

    def response(self, response):
        if not self.on:
            return
        try:
            body = response.body()
        except Exception:  # a redirect has no body
            body = b""
        self.http.append((response.url, body + "".join(f"{k}: {v}\n" for k, v in response.headers.items()).encode()))

    def websocket(self, ws):
        ws.on("framereceived", lambda payload: self.on and self.frames.append(
            (time.monotonic(), payload if isinstance(payload, str) else payload.decode("utf-8", "replace"))))


def test_a_whole_blind_tournament_then_the_reveal(browser, live_app):
    slugs = contestant_slugs(live_app)
    secret = identifiers(live_app)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(BOTH_STREAMING)
    rec = Recorder()
    context.on("response", rec.response)
    page = context.new_page()
    page.on("websocket", rec.websocket)
    page.set_default_timeout(30_000)
    live_app.log_in_page(page, "tournaments/new/")
    for i, slug in enumerate(slugs, start=1):
        page.select_option(f"#id_contestant_{i}", slug)
    # Seeded as given: the first match is two llama.cpp variants and the second two transformers
    # ones (tests/live/tournament.py), so both sides of a match stream at once, at one engine's
    # pace (random seeding is tested in tests/arena/tournaments).
    page.check("input[name=seeding][value=given]")
    page.fill("#id_prompt", PROMPT)
    page.fill("#id_temperature", "0.7")
    page.fill("#id_max_new_tokens", "24")

    rec.on = True  # from the Start click to the last pick, nothing may name a contestant
    titles, both_streaming, first_tokens = [], [], []
    started = time.time()
    with page.expect_navigation():
        page.click("#tournament-form button[type=submit]")
    for number in (1, 2, 3):
        page.wait_for_selector(f"#match h2:has-text('Match {number}:')")
        titles.append(page.title())
        frames_from = len(rec.frames)
        page.wait_for_selector("#left-status[data-state=done]", timeout=600_000)
        page.wait_for_selector("#right-status[data-state=done]", timeout=600_000)
        both_streaming.append(page.evaluate("window.__both"))
        first_tokens.append(first_token_gap(rec.frames[frames_from:]))
        assert page.text_content("#left-output").strip() and page.text_content("#right-output").strip()
        assert "Speeds are shown at the reveal" in page.text_content("#left-metrics")
        titles.append(page.title())
        # Judging: the prompt stays in view, nothing is left to stop, and no replay is offered mid-way.
        assert page.locator(".tournament-head .prompt .turn-user").is_visible()
        assert page.text_content(".tournament-head .prompt .turn-user").strip() == PROMPT
        page.wait_for_selector("#battle-stop button", state="detached")
        assert page.locator("#replay-form").count() == 0
        if number == 1:
            for name, size in (("tournament-judging-desktop", DESKTOP), ("tournament-judging-phone", PHONE)):
                page.set_viewport_size(size)
                screenshot(page, name)
            page.set_viewport_size(DESKTOP)
        if number == 3:
            page.wait_for_timeout(500)  # the last frames of the final match are recorded too
            rec.on = False
        with page.expect_navigation():
            page.click(f"#winner-form button[value={'left' if number % 2 else 'right'}]")
    page.wait_for_selector("#reveal")
    elapsed = time.time() - started
    assert page.locator("#replay-form").is_visible()  # offered once it has ended

    # --- the reveal: every name, the winner, each match's speeds -----------------------
    html = page.content()
    tournament_id = page.url.rstrip("/").split("/")[-1]
    body = live_app.api(live_app.token("admin"), "get", "/api/v1/tournaments/" + tournament_id).json()
    assert body["state"] == "finished" and {c["slug"] for c in body["contestants"]} == set(slugs)
    names = {c["slug"]: c["name"] for c in body["contestants"]}
    for name in names.values():
        assert name in html
    assert page.title() == f"Tournament won by {body['winner']['name']} · LLM Arena"
    assert page.text_content("#champion") == body["winner"]["name"]
    tps = [c.strip() for c in page.locator("#reveal [data-metric=tps]").all_text_contents()]
    ttft = [c.strip() for c in page.locator("#reveal [data-metric=ttft]").all_text_contents()]
    assert len(tps) == 6 and all(re.fullmatch(r"\d+\.\d", v) for v in tps), tps
    assert all(re.fullmatch(r"\d+\.\d\d s", v) for v in ttft), ttft

    # --- blindness: nothing received before the reveal names or times a contestant -------
    assert rec.http and rec.frames
    received = [(url, data.decode("utf-8", "replace")) for url, data in rec.http] + [("ws", f) for _t, f in rec.frames]
    for url, text in received:
        lowered = text.lower()
        for word in secret:
            assert word.lower() not in lowered, f"{word!r} reached the browser before the reveal in {url}"
        if "/static/" not in url:
            speed = SPEED.search(text)
            assert not speed, f"a speed reached the browser before the reveal in {url}: {speed}"
    figures = set()
    for match in body["matches"]:
        for side in ("left", "right"):
            gen = match["battle"][side]
            if gen["tokens_per_s"] is not None:
                figures.add(f"{gen['tokens_per_s']:.1f}")
            if gen["time_to_first_token_s"] is not None:
                figures.add(f"{gen['time_to_first_token_s']:.2f} s")
    for url, text in received:
        if "/static/" not in url:
            text = FORM_BOUNDS.sub("", text)  # a form's min/max/step (temperature max="2.0") is no measurement
            for figure in figures:
                assert not re.search(rf"(?<![\d.-]){re.escape(figure)}(?![\d.])", text), (figure, url)
    for title in titles:
        assert all(word.lower() not in title.lower() for word in secret), title
        assert re.fullmatch(r"Tournament: match \d · LLM Arena", title), title

    # --- both sides streamed at once -------------------------------------------------------
    assert any(both_streaming), (both_streaming, first_tokens)
    print(f"\n4-model tournament of {slugs} in {elapsed:.0f} s; both streaming at once per match: {both_streaming}; "
          f"gap between the sides' first tokens per match (s): {first_tokens}; "
          f"{len(rec.http)} HTTP responses and {len(rec.frames)} WebSocket frames checked before the reveal")
    context.close()


def first_token_gap(frames) -> float | None:
    """Seconds between the first token frame of one side and of the other."""
    first = {}
    for at, text in frames:
        for side in ("left", "right"):
            if side not in first and f'id="{side}-output" hx-swap-oob="beforeend"' in text:
                first[side] = at
    return round(abs(first["left"] - first["right"]), 3) if len(first) == 2 else None
