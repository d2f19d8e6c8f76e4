"""Markdown for untrusted text (model answers): formatting yes, HTML and script never.

A model's answer can say anything, including what an attacker put in its prompt or its
training data, so the rendering treats it as hostile:
- raw HTML is never passed through: `<script>`, `<img onerror>`, `<iframe>` come out as text;
- links are kept only to http, https, mailto or relative URLs; any other target
  (javascript:, data:, vbscript:, also hidden behind entities, percent-escapes, control
  characters or mixed case) leaves the Markdown as plain text;
- links open in a new tab without a referrer or an opener, and search engines ignore them;
- images become links to the image: the page never loads a URL a model chose (which would
  tell a third party who is reading, and when).
"""

from __future__ import annotations

import html
import re
from urllib.parse import unquote

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt

ALLOWED_SCHEMES = frozenset({"http", "https", "mailto"})
LINK_ATTRS = {"rel": "nofollow noopener noreferrer", "target": "_blank"}
_SCHEME = re.compile(r"[a-z][a-z0-9+.\-]*:")
# What a browser's URL parser drops or ignores (control characters, spaces, invisible
# format characters), so "java\tscript:" or "java&#8203;script:" cannot pass for relative.
_IGNORED = re.compile(r"[\x00-\x20\x7f-\x9f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2064\ufeff]")


def safe_url(url: str) -> bool:
    """Whether a link target may stay a link: http(s), mailto, or relative to this site."""
    probe = url
    for _ in range(3):  # entities inside percent-escapes inside entities...
        decoded = html.unescape(unquote(probe))
        if decoded == probe:
            break
        probe = decoded
    probe = _IGNORED.sub("", probe).lower()
    scheme = _SCHEME.match(probe)
    if scheme:
        return scheme.group()[:-1] in ALLOWED_SCHEMES
    # No scheme a browser would accept: relative, unless a colon comes before any path,
    # query or fragment (a URL parser that disagrees with the pattern above must not win).
    return ":" not in re.split(r"[/?#]", probe, maxsplit=1)[0]


def _link_open(self, tokens, idx, options, env):
    token = tokens[idx]
    for name, value in LINK_ATTRS.items():
        token.attrSet(name, value)
    return self.renderToken(tokens, idx, options, env)


def _image(self, tokens, idx, options, env):
    """An image as a link to it, labelled with its alt text: nothing is fetched."""
    token = tokens[idx]
    src = token.attrGet("src") or ""
    label = self.renderInlineAsText(token.children or [], options, env) or src
    extra = "".join(f' {name}="{escape(value)}"' for name, value in LINK_ATTRS.items())
    return f'<a class="md-image" href="{escape(src)}"{extra}>{escape(label)}</a>'


class _SafeLinks(MarkdownIt):
    def validateLink(self, url: str) -> bool:
        """Links, autolinks, reference definitions and images alike (`safe_url`)."""
        return safe_url(url)


def _parser() -> MarkdownIt:
    md = _SafeLinks("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("link_open", _link_open)
    md.add_render_rule("image", _image)
    return md


_MD = _parser()


def render(text: str) -> SafeString:
    """The text as HTML, safe to put in a page as it is."""
    return mark_safe(_MD.render(text or ""))
