"""Model output is untrusted: it is shown as Markdown, never as HTML or script.

The renderer (arena/markdown.py) on its own, then every place an answer is shown: the
generation, battle and tournament pages, the read-only share pages and the WebSocket
frames (final and streamed). No model is needed: the tests write the answers themselves."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from channels.routing import URLRouter

from arena import markdown, streams
from arena.battles.models import Battle
from arena.generations.models import Generation
from arena.history.models import ShareLink
from arena.routing import websocket_urlpatterns
from arena.tournaments.actions import start_tournament
from inference import protocol as p
from tests.arena.socket_client import WebsocketCommunicator
from tests.payloads import ALL_PAYLOADS, PAYLOADS

# What an attacker would have a model say. Each must come out inert.

ALLOWED_TAGS = {"p", "a", "em", "strong", "code", "pre", "ul", "ol", "li", "blockquote", "hr", "br", "s",
                "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td"}
ALLOWED_ATTRS = {"href", "rel", "target", "class", "title", "start", "style"}
SAFE_HREF = re.compile(r"^(https?://|mailto:|/|#|[^:/?#]*([/?#]|$))", re.I)


class Collector(HTMLParser):
    """Every tag and attribute the browser would see inside the answer elements (class "output")."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0  # > 0 while inside an answer element
        self.stack: list[bool] = []
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.answers = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        is_answer = "output" in (attrs.get("class") or "").split()
        if self.depth:
            self.tags.append((tag, attrs))
        if tag in ("br", "hr", "img", "input", "meta", "link", "base", "embed"):
            return  # void elements: no end tag comes
        self.stack.append(is_answer)
        if is_answer:
            self.depth += 1
            self.answers += 1

    def handle_startendtag(self, tag, attrs):
        if self.depth:
            self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in ("br", "hr", "img", "input", "meta", "link", "base", "embed"):
            return
        if self.stack and self.stack.pop():
            self.depth -= 1

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)


def inside_answers(html: str) -> Collector:
    collector = Collector()
    collector.feed(html)
    collector.close()
    return collector


def assert_inert(fragment: str, wrapped: bool = True) -> Collector:
    """No element, attribute or link target in the answers that could run script or fetch anything."""
    found = inside_answers(fragment if wrapped else f'<div class="output">{fragment}</div>')
    assert found.answers, "no answer element found"
    for tag, attrs in found.tags:
        assert tag in ALLOWED_TAGS, (tag, attrs)
        assert set(attrs) <= ALLOWED_ATTRS, (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        if "href" in attrs:
            assert SAFE_HREF.match(attrs["href"]), attrs["href"]
        if "style" in attrs:
            assert re.fullmatch(r"text-align:(left|right|center)", attrs["style"]), attrs["style"]
    return found


# --- the renderer -------------------------------------------------------------------------
@pytest.mark.parametrize("payload", PAYLOADS.values(), ids=PAYLOADS.keys())
def test_payload_renders_inert_and_stays_readable(payload):
    html = markdown.render(payload)
    found = assert_inert(html, wrapped=False)
    assert not any(tag == "a" and "href" in attrs and "xss" in attrs["href"] for tag, attrs in found.tags)
    # What the model said is still there to read, as text (or as a link's title, quoted).
    if "xss" in payload:
        titles = [attrs.get("title", "") for _tag, attrs in found.tags]
        assert "__xss" in "".join(found.text) or any("onmouseover" in t for t in titles)


def test_all_payloads_at_once_render_inert():
    assert_inert(markdown.render(ALL_PAYLOADS), wrapped=False)


@pytest.mark.parametrize("url, ok", [
    ("https://example.com/a?b=1#c", True), ("http://example.com", True), ("mailto:a@example.com", True),
    ("/g/1/", True), ("relative/path", True), ("#section", True), ("?q=1", True), ("//example.com/x", True),
    ("javascript:alert(1)", False), ("JAVASCRIPT:alert(1)", False), (" javascript:alert(1)", False),
    ("java\tscript:alert(1)", False), ("java\nscript:alert(1)", False), ("\x01javascript:alert(1)", False),
    ("%6Aavascript:alert(1)", False), ("&#106;avascript:alert(1)", False), ("java%0Ascript:alert(1)", False),
    ("java\u200bscript:alert(1)", False), ("data:text/html,x", False), ("vbscript:x", False),
    ("file:///etc/passwd", False), ("ftp://example.com", False), ("weird&colon;x", False), ("a b:c", False),
])
def test_safe_url(url, ok):
    assert markdown.safe_url(url) is ok


def test_markdown_is_welcome():
    html = markdown.render("# Title\n\nSome **bold**, *em*, ~~gone~~ and `code`.\n\n- one\n- two\n\n"
                           "```python\nprint('<hi>')\n```\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n> quoted")
    for piece in ("<h1>Title</h1>", "<strong>bold</strong>", "<em>em</em>", "<s>gone</s>", "<code>code</code>",
                  "<li>one</li>", '<code class="language-python">print(\'&lt;hi&gt;\')', "<table>",
                  '<td style="text-align:right">2</td>', "<blockquote>"):
        assert piece in html, piece
    assert_inert(html, wrapped=False)


def test_links_open_apart_and_images_are_never_fetched():
    html = markdown.render("[docs](https://example.com/docs) <https://example.com/auto> "
                           '![a *tracking* pixel](https://tracker.example/p.png "t")')
    assert html.count('rel="nofollow noopener noreferrer" target="_blank"') == 3
    assert '<a href="https://example.com/docs"' in html and '<a href="https://example.com/auto"' in html
    assert "<img" not in html
    assert ('<a class="md-image" href="https://tracker.example/p.png" rel="nofollow noopener noreferrer" '
            'target="_blank">a tracking pixel</a>') in html


def test_empty_and_none():
    assert markdown.render("") == "" and markdown.render(None) == ""


# --- the pages ----------------------------------------------------------------------------
def finished_generation(owner, model, text=ALL_PAYLOADS, **fields) -> Generation:
    gen = Generation.objects.create(owner=owner, model=model, prompt="Say something dangerous.", params={}, **fields)
    gen.finish(Generation.Status.DONE, text=text, finish_reason="stop",
               metrics={"generated_tokens": 40, "decode_tokens_per_s": 12.0})
    gen.refresh_from_db()
    return gen


def comparison(owner, catalogue) -> Battle:
    left = finished_generation(owner, catalogue[0])
    right = finished_generation(owner, catalogue[1], text="**Safe** answer with a [link](https://example.com).")
    return Battle.objects.create(owner=owner, left=left, right=right)


def get_page(client, user, url) -> str:
    if user:
        client.force_login(user)
    response = client.get(url)
    assert response.status_code == 200, url
    return response.content.decode()


def check_page(html: str, answers: int):
    found = assert_inert(html)
    assert found.answers == answers
    assert "window.__xss" in "".join(found.text)  # shown, as text
    assert 'class="output markdown"' in html


@pytest.mark.django_db
def test_generation_page_and_its_share_page(client, owner, smollm):
    gen = finished_generation(owner, smollm)
    check_page(get_page(client, owner, gen.get_absolute_url()), answers=1)
    link = ShareLink.share(owner, gen)
    client.logout()
    check_page(get_page(client, None, link.get_absolute_url()), answers=1)


@pytest.mark.django_db
def test_an_unfinished_answer_is_escaped_text_until_it_ends(client, owner, smollm):
    """While it streams, tokens append to plain text: the page starts with the answer so far, escaped."""
    gen = Generation.objects.create(owner=owner, model=smollm, prompt="Hi", params={}, text="<b>so far</b> **x**")
    html = get_page(client, owner, gen.get_absolute_url())
    assert '<div id="gen-output" class="output">&lt;b&gt;so far&lt;/b&gt; **x**</div>' in html


@pytest.mark.django_db
def test_battle_page_and_its_share_page(client, owner, catalogue):
    battle = comparison(owner, catalogue)
    html = get_page(client, owner, battle.get_absolute_url())
    check_page(html, answers=2)
    assert "<strong>Safe</strong>" in html
    link = ShareLink.share(owner, battle)
    client.logout()
    check_page(get_page(client, None, link.get_absolute_url()), answers=2)


@pytest.mark.django_db
def test_tournament_page_and_its_share_page(client, owner, catalogue):
    tournament = start_tournament(owner, contestants=catalogue[:4], prompt="Be dangerous.", params={},
                                  seeding="given")
    battle = tournament.current_match().battle
    for gen in (battle.left, battle.right):
        gen.finish(Generation.Status.DONE, text=ALL_PAYLOADS, finish_reason="stop", metrics={"generated_tokens": 9})
    check_page(get_page(client, owner, tournament.get_absolute_url()), answers=2)
    link = ShareLink.share(owner, tournament)
    client.logout()
    check_page(get_page(client, None, link.get_absolute_url()), answers=2)


# --- the sockets --------------------------------------------------------------------------
def emit(gen, kind, **fields):
    streams.client().xadd(streams.keys().stream(str(gen.id)), p.event(kind, **fields))


async def frames_until(comm, marker: str, limit: int = 20) -> str:
    frames = []
    for _ in range(limit):
        frames.append(await comm.receive_from(timeout=5))
        if marker in frames[-1]:
            return "".join(frames)
    raise AssertionError(f"no frame with {marker!r} in {frames}")


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_generation_socket_streams_escaped_tokens_and_ends_in_inert_markdown(owner, smollm):
    gen = await Generation.objects.acreate(owner=owner, model=smollm, prompt="Hi", params={})
    emit(gen, p.STARTED, prompt_tokens=3, queue_s=0.0)
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/generations/{gen.id}/")
    comm.scope["user"] = owner
    assert (await comm.connect())[0]
    await frames_until(comm, 'id="gen-output"')
    for n, payload in enumerate(PAYLOADS.values(), start=1):
        emit(gen, p.TOKEN, text=payload, n=n)
    streamed = await frames_until(comm, f'data-n="{len(PAYLOADS)}"', limit=len(PAYLOADS) + 5)
    assert "<script" not in streamed and "<img" not in streamed and "&lt;script&gt;" in streamed
    emit(gen, p.DONE, text=ALL_PAYLOADS, finish_reason="stop", metrics={"generated_tokens": len(PAYLOADS)})
    final = await frames_until(comm, 'data-state="done"')
    assert 'id="gen-output" class="output markdown"' in final
    assert "window.__xss" in "".join(assert_inert(final).text)
    await comm.disconnect()

    # A late viewer (the stream replayed, then the database once it expires) gets the same.
    for when in ("replay", "stored"):
        if when == "stored":
            await Generation.objects.filter(id=gen.id).aupdate(status=Generation.Status.DONE, text=ALL_PAYLOADS)
            streams.client().delete(streams.keys().stream(str(gen.id)))
        comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/generations/{gen.id}/")
        comm.scope["user"] = owner
        assert (await comm.connect())[0]
        frame = await frames_until(comm, 'class="output markdown"')
        assert_inert(frame)
        await comm.disconnect()


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_battle_socket_ends_in_inert_markdown_on_both_sides(owner, catalogue):
    left = await Generation.objects.acreate(owner=owner, model=catalogue[0], prompt="Hi", params={})
    right = await Generation.objects.acreate(owner=owner, model=catalogue[1], prompt="Hi", params={})
    battle = await Battle.objects.acreate(owner=owner, left=left, right=right)
    comm = WebsocketCommunicator(URLRouter(websocket_urlpatterns), f"/ws/battles/{battle.id}/")
    comm.scope["user"] = owner
    assert (await comm.connect())[0]
    for gen in (left, right):
        emit(gen, p.STARTED, prompt_tokens=3, queue_s=0.0)
        emit(gen, p.TOKEN, text=PAYLOADS["script tag"], n=1)
    frames = await frames_until(comm, "&lt;script&gt;")
    assert "<script" not in frames
    for gen in (left, right):
        emit(gen, p.DONE, text=ALL_PAYLOADS, finish_reason="stop", metrics={"generated_tokens": 2})
    frames = await frames_until(comm, 'id="vote-buttons"', limit=40)
    for side in ("left", "right"):
        assert f'id="{side}-output" class="output markdown"' in frames
    found = assert_inert(frames)
    assert found.answers >= 2
    await comm.disconnect()
