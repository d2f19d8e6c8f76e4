"""Hostile model output in a real Chromium, on the real application under its
Content-Security-Policy: stored answers full of script, event handlers and javascript:
links on the generation, battle and share pages, and the same streamed token by token over
the WebSocket. Nothing may run (no dialog, no window.__xss), nothing may be fetched from
elsewhere, and the policy itself must not have to block anything.

No model is needed: the answers are written into the application's database and its Redis
stream directly, as a worker would write them."""

from __future__ import annotations

import contextlib
import json

import pytest

from inference import protocol as p
from tests.payloads import ALL_PAYLOADS, PAYLOADS

pytestmark = [pytest.mark.live, pytest.mark.browser]

SEED = """
import json
from django.contrib.auth import get_user_model
from arena.battles.models import Battle
from arena.catalogue.models import ModelEntry
from arena.history.models import ShareLink
from arena.generations.models import Generation

text = json.loads({payload!r})
admin = get_user_model().objects.get(username="admin")
model = ModelEntry.objects.filter(enabled=True).first()

def finished(answer):
    gen = Generation.objects.create(owner=admin, model=model, prompt="Say something dangerous.", params={{}})
    gen.finish(Generation.Status.DONE, text=answer, finish_reason="stop", metrics={{"generated_tokens": 9}})
    return gen

gen = finished(text)
battle = Battle.objects.create(owner=admin, left=finished(text), right=finished("**Bold** and [a link](https://example.com)"))
live = Generation.objects.create(owner=admin, model=model, prompt="Stream it.", params={{}},
                                 status=Generation.Status.RUNNING)
print(json.dumps({{
    "gen": gen.get_absolute_url(), "battle": battle.get_absolute_url(), "live": str(live.id),
    "share_gen": ShareLink.share(admin, gen).get_absolute_url(),
    "share_battle": ShareLink.share(admin, battle).get_absolute_url(),
}}))
"""

# What the page records for the test: dialogs are caught by Playwright; CSP violations here.
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation",
  e => window.__violations.push(e.violatedDirective + " " + e.blockedURI));
"""

INSPECT = """() => {
  const answers = [...document.querySelectorAll(".output")];
  const bad = [];
  for (const answer of answers) {
    for (const el of answer.querySelectorAll("*")) {
      const tag = el.tagName.toLowerCase();
      if (["script", "iframe", "img", "svg", "object", "embed", "style", "form", "base", "meta", "math", "details"]
          .includes(tag))
        bad.push("<" + tag + ">");
      for (const attr of el.attributes) {
        if (attr.name.startsWith("on")) bad.push(tag + " " + attr.name);
      }
      if (tag === "a" && !/^(https?:|mailto:|\\/)/i.test(el.getAttribute("href") || "/"))
        bad.push("href " + el.getAttribute("href"));
    }
  }
  return {answers: answers.length, bad, text: answers.map(a => a.textContent).join("\\n"),
          xss: window.__xss === undefined ? null : String(window.__xss), violations: window.__violations || []};
}"""


@pytest.fixture(scope="module")
def seeded(live_app):
    made = json.loads(live_app.manage("shell", "-c", SEED.format(payload=json.dumps(ALL_PAYLOADS))).splitlines()[-1])
    # The running generation has no task following it: hold its watch key as one would, or the
    # sweeper (arena/generations/sweeper.py) fails it before this module streams into it.
    live_app.redis.set(f"{live_app.prefix}:gen:{made['live']}:watch", "test", ex=600)
    return made


@pytest.fixture(scope="module")
def watched(page, live_app):
    """The module's page, logged in, recording dialogs, CSP violations and requests to other origins."""
    seen = {"dialogs": [], "foreign": []}

    def on_dialog(dialog):
        seen["dialogs"].append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    own = (live_app.url, live_app.url.replace("http", "ws", 1))
    page.on("request", lambda request: None if request.url.startswith(own) else seen["foreign"].append(request.url))
    page.add_init_script(WATCH)
    page.goto(live_app.url + "accounts/login/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", live_app.admin_password)
    page.click("button[type=submit]")
    page.wait_for_url("**/playground/")
    return page, seen


def assert_nothing_ran(page, seen, answers: int):
    # Give any handler its chance: hover and focus everything in the answers, toggle what toggles.
    for element in page.query_selector_all(".output *")[:200]:
        with contextlib.suppress(Exception):  # hidden or zero-sized: nothing to hover
            element.hover(timeout=500)
    page.wait_for_timeout(300)
    found = page.evaluate(INSPECT)
    assert found["answers"] == answers
    assert found["bad"] == [], found["bad"]
    assert found["xss"] is None and seen["dialogs"] == [] and seen["foreign"] == []
    assert found["violations"] == [], found["violations"]  # the policy never had to step in
    assert "window.__xss" in found["text"] and "<script>" in found["text"]  # shown, as text


@pytest.mark.parametrize("which, answers", [("gen", 1), ("battle", 2), ("share_gen", 1), ("share_battle", 2)])
def test_stored_answers_run_nothing(watched, live_app, seeded, which, answers):
    page, seen = watched
    page.goto(live_app.url + seeded[which].lstrip("/"))
    page.wait_for_load_state("networkidle")
    assert_nothing_ran(page, seen, answers)
    if which == "battle":
        assert page.inner_html("#right-output").count("<strong>Bold</strong>") == 1  # Markdown is welcome
        link = page.query_selector("#right-output a")
        assert link.get_attribute("rel") == "nofollow noopener noreferrer" and link.get_attribute("target") == "_blank"


def test_streamed_answer_runs_nothing_and_ends_as_markdown(watched, live_app, seeded):
    """The page's WebSocket (allowed by connect-src 'self') gets hostile tokens, then the final frame."""
    page, seen = watched
    page.goto(live_app.url + f"g/{seeded['live']}/")
    page.wait_for_selector("#gen-controls button.stop")  # the socket's first frame is in
    stream = f"{live_app.prefix}:gen:{seeded['live']}:events"
    live_app.redis.xadd(stream, p.event(p.STARTED, prompt_tokens=3, queue_s=0.0))
    for n, payload in enumerate(PAYLOADS.values(), start=1):
        live_app.redis.xadd(stream, p.event(p.TOKEN, text=payload + "\n\n", n=n))
    last = json.dumps(list(PAYLOADS.values())[-1])
    page.wait_for_function(f"() => document.querySelector('#gen-output').textContent.includes({last})")
    assert_nothing_ran(page, seen, answers=1)
    live_app.redis.xadd(stream, p.event(p.DONE, text=ALL_PAYLOADS, finish_reason="stop",
                                        metrics={"generated_tokens": len(PAYLOADS)}))
    page.wait_for_selector("#gen-status[data-state=done]")
    assert "markdown" in page.get_attribute("#gen-output", "class")
    assert_nothing_ran(page, seen, answers=1)
