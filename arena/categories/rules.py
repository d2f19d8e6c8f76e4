"""Which category a prompt falls in by rule: pure, no Django.

A rule is a category's keywords (comma-separated, each matched as a whole word or phrase, case
ignored), a regex (the `regex` module, searched anywhere in the prompt under REGEX_TIMEOUT_S, as
arena/suites/checks.py runs a suite's regexes: a pathological pattern times out and simply does
not match) or a prompt tag (the battle's tag, or a suite prompt's tags and its suite's). Rules are
tried in their order; the first that matches names the category.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex

KEYWORDS, REGEX, TAG = "keywords", "regex", "tag"
KINDS = (KEYWORDS, REGEX, TAG)
REGEX_TIMEOUT_S = 0.25  # the suites' figure: far beyond a sane pattern; `regex` stops near twice this
MAX_VALUE_CHARS = 1_000
MAX_PROMPT_CHARS = 20_000  # a rule reads the prompt's first 20,000 characters


class RuleError(ValueError):
    """A rule that cannot be used, in words a staff member can act on."""


@dataclass(frozen=True)
class Rule:
    id: int
    category: str
    kind: str
    value: str


@dataclass(frozen=True)
class Match:
    rule: Rule
    timed_out: tuple[int, ...] = ()  # rules before it whose regex ran out of time


def keywords(value: str) -> list[str]:
    """The keywords of a rule's value: comma-separated, trimmed, none empty."""
    return [k.strip() for k in value.split(",") if k.strip()]


def compile_rule(kind: str, value: str):
    """The compiled pattern of a rule; RuleError when it cannot be used."""
    if kind not in KINDS:
        raise RuleError(f"A rule is one of {', '.join(KINDS)}, not {kind!r}.")
    if not value.strip():
        raise RuleError("A rule needs a value.")
    if len(value) > MAX_VALUE_CHARS:
        raise RuleError(f"A rule's value is at most {MAX_VALUE_CHARS} characters.")
    if kind == KEYWORDS:
        words = keywords(value)
        if not words:
            raise RuleError("Give at least one keyword (comma-separated).")
        alternatives = "|".join(regex.escape(w) for w in sorted(words, key=len, reverse=True))
        return regex.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", regex.IGNORECASE)
    if kind == REGEX:
        try:
            return regex.compile(value)
        except regex.error as exc:
            raise RuleError(f"Not a valid regex: {exc}") from None
    return value.strip().casefold()


def first_match(rules: Sequence[Rule], prompt: str, tags: Iterable[str]) -> Match | None:
    """The first of `rules` (in their order) that `prompt` or its `tags` match; None when none does.
    A rule that cannot be compiled never matches (the admin refuses one before it is saved)."""
    text = prompt[:MAX_PROMPT_CHARS]
    tagged = {t.strip().casefold() for t in tags if t and t.strip()}
    timed_out: list[int] = []
    for rule in rules:
        try:
            pattern = compile_rule(rule.kind, rule.value)
        except RuleError:
            continue
        if rule.kind == TAG:
            if pattern in tagged:
                return Match(rule, tuple(timed_out))
            continue
        try:
            if pattern.search(text, timeout=REGEX_TIMEOUT_S):
                return Match(rule, tuple(timed_out))
        except TimeoutError:
            timed_out.append(rule.id)
    return None
