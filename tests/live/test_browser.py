"""A real headless Chromium (Debian's) logs in, streams an answer, and stops one."""

import pytest

pytestmark = [pytest.mark.live, pytest.mark.browser, pytest.mark.slow]


def test_log_in_stream_an_answer_then_stop_another(page, live_app):
    live_app.log_in_page(page)
    page.select_option("#id_model", "smollm2-135m")
    page.fill("#id_prompt", "What is the capital of France?")
    page.fill("#id_temperature", "0")
    page.fill("#id_max_new_tokens", "40")
    page.click("#playground-form button[type=submit]")
    # The first Send spins a worker up (the page says so), then the answer and its metrics.
    page.wait_for_selector("#gen-status[data-state=done]", timeout=240_000)
    assert "Paris" in page.text_content("#gen-output")
    assert page.text_content("[data-metric=tps]").strip() not in ("", "–")
    assert page.text_content("[data-metric=ttft]").strip().endswith("s")
    assert int(page.text_content("[data-metric=tokens]")) > 0
    # Live to the end, without a reload: no Stop left, and the recent list has this answer, done.
    assert page.locator("#gen-controls button.stop").count() == 0
    first_id = page.get_attribute("#generation", "data-generation")
    page.wait_for_selector(f"#recent-generations #recent-{first_id} [data-state=done]")
    assert page.locator("#recent-generations").is_visible()

    page.fill("#id_prompt", "Write a very long story about a lighthouse keeper.")
    page.fill("#id_temperature", "0.8")
    page.fill("#id_max_new_tokens", "800")
    page.click("#playground-form button[type=submit]")
    # Tokens arrive over the WebSocket while the status still says "running"...
    page.wait_for_function(  # a function, not an expression: the page's CSP refuses eval
        "() => document.querySelector('#gen-output') && document.querySelector('#gen-output').textContent.length > 20"
        " && document.querySelector('#gen-status').dataset.state === 'running'", timeout=120_000)
    # ...until Stop, which ends it within a second or so.
    page.click("#gen-controls button.stop")
    page.wait_for_selector("#gen-status[data-state=cancelled]", timeout=3_000)
    stopped_text = page.text_content("#gen-output")
    page.wait_for_timeout(1000)
    assert page.text_content("#gen-output") == stopped_text  # nothing streams after the stop
    second_id = page.get_attribute("#generation", "data-generation")
    page.wait_for_selector(f"#recent-{second_id} [data-state=cancelled]")  # listed when it started, stopped now
    assert page.locator("#recent-generations li").first.get_attribute("id") == f"recent-{second_id}"
    assert page.locator(f"#recent-{first_id} [data-state=done]").count() == 1
