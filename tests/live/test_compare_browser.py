"""A whole comparison in a real headless Chromium (Debian's) against the running
application: the packaged SmolLM2 on the transformers engine against the same file on
llama.cpp. Both answers stream at the same time, speeds and charts appear, the vote is
kept, and swap / follow-up make linked battles."""

import time

import pytest

from .artefacts import DESKTOP, PHONE, screenshot

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow]
SIDES = ("left", "right")


def record_token_frames(page) -> dict[str, list[float]]:
    """When each side's token frames reached the browser (monotonic seconds)."""
    seen = {side: [] for side in SIDES}

    def on_socket(ws):
        def on_frame(payload):
            text = payload if isinstance(payload, str) else payload.decode(errors="replace")
            for side in SIDES:
                if f'id="{side}-output" hx-swap-oob="beforeend"' in text:
                    seen[side].append(time.monotonic())
        ws.on("framereceived", on_frame)

    page.on("websocket", on_socket)
    return seen


def wait_both_done(page, timeout=300_000):
    page.wait_for_selector("#left-status[data-state=done]", timeout=timeout)
    page.wait_for_selector("#right-status[data-state=done]", timeout=timeout)


def test_a_comparison_streams_both_sides_at_once_then_vote_swap_and_follow_up(page, live_app):
    live_app.log_in_page(page)
    frames = record_token_frames(page)
    page.goto(live_app.url + "compare/")
    page.select_option("#id_left_model", "smollm2-135m")
    page.select_option("#id_right_model", "smollm2-135m-llamacpp")
    # A long answer: llama.cpp decodes several times faster, and must still be streaming
    # when the transformers side's first token arrives.
    page.fill("#id_prompt", "Write a long story about a ship at sea.")
    page.click("details.params summary")
    page.fill("#id_temperature", "0")
    page.fill("#id_max_new_tokens", "80")
    page.click("#compare-form button[type=submit]")
    page.wait_for_url("**/b/*/")
    first_url = page.url
    wait_both_done(page)

    # Both sides streamed at once: each side's first token came before the other's last.
    assert frames["left"] and frames["right"], frames
    assert frames["left"][0] < frames["right"][-1] and frames["right"][0] < frames["left"][-1]
    for side in SIDES:
        assert page.text_content(f"#{side}-output").strip()
        assert page.text_content(f"#{side}-metrics [data-metric=tps]").strip() not in ("", "–")
        assert page.text_content(f"#{side}-metrics [data-metric=ttft]").strip().endswith("s")
        assert page.locator(f"#{side}-metrics svg polyline").count() == 1
    assert page.text_content("article[data-side=left] .side-name") == "SmolLM2 135M Instruct"
    # Both answers ended, no reload: nothing left to stop.
    page.wait_for_selector("#battle-stop button", state="detached")

    page.click("#vote-buttons button[value=left]")
    page.wait_for_selector("#verdict .voted[data-outcome=left]")

    page.click("text=Swap sides")
    page.wait_for_url(lambda url: url != first_url and "/b/" in url)
    assert "llama.cpp" in page.text_content("article[data-side=left] .side-name")
    wait_both_done(page)

    earlier = {side: page.text_content(f"#{side}-output").strip() for side in SIDES}
    page.fill("textarea[name=prompt]", "Now one sentence about the sky.")
    page.click(".follow-up button[type=submit]")
    page.wait_for_selector(".thread .turn-assistant")  # the earlier answers are part of the conversation
    wait_both_done(page)
    assert_own_threads(page, earlier, "Write a long story about a ship at sea.")
    for name, size in (("compare-follow-up-desktop", DESKTOP), ("compare-follow-up-phone", PHONE)):
        page.set_viewport_size(size)
        screenshot(page, name)
    page.set_viewport_size(DESKTOP)
    page.reload()  # the permalink shows the stored battle without a socket
    assert page.locator("#left-status[data-state=done]").count() == 1
    assert_own_threads(page, earlier, "Write a long story about a ship at sea.")

    # Swapped, each side takes its own thread along: the left side now shows the right one's.
    page.click("text=Swap sides")
    page.wait_for_selector("article[data-side=left] .thread")
    assert_own_threads(page, {"left": earlier["right"], "right": earlier["left"]},
                       "Write a long story about a ship at sea.")
    wait_both_done(page)


def assert_own_threads(page, earlier: dict[str, str], prompt: str) -> None:
    """Each side shows its own conversation above its answer: the earlier prompt, then that
    side's own earlier answer (not the other side's), turn by turn."""
    for side in SIDES:
        thread = page.locator(f"article[data-side={side}] .thread")
        assert thread.locator(".turn").count() == 2
        assert thread.locator(".turn-user").text_content().strip().endswith(prompt)
        shown = " ".join(thread.locator(".turn-assistant .markdown").text_content().split())
        assert shown == " ".join(earlier[side].split()), (side, shown[:200], earlier[side][:200])
