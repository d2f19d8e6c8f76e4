"""A model judge's prompt and how its answer is read. Pure: no Django.

The template is the user's to edit (a run keeps the text it ran with); its placeholders are
{question}, {answer_a}, {answer_b} and {reference} (the suite prompt's reference answer, or a
line saying there is none). The judge is asked for a JSON object {"verdict": "A"|"B"|"C",
"reason": "..."} (a one-line reason, at most MAX_REASON_CHARS) and its decoding is constrained
to exactly that (`VERDICT_SCHEMA`, inference.structured), so even a small local model answers in
the form; a judge's text that still does not parse (an endpoint that ignores response_format)
reads as a tie with no reason, and its raw text is kept beside it. The verdict comes first, so
the reason explains a choice already made (it cannot change what was chosen).
"""

from __future__ import annotations

import json
import re
import string
import zlib

from arena.battles.judging import MAX_REASON_CHARS, TIE, one_line, seen_as

DEFAULT_TEMPLATE = """Please act as an impartial judge and evaluate the quality of the two answers below to the \
user's question. Choose the answer that follows the user's instructions and answers the question better, \
considering helpfulness, relevance, accuracy and level of detail. Do not let the order in which the answers \
are shown, their length or the names of assistants influence you.

[Question]
{question}

[Reference answer]
{reference}

[Answer A]
{answer_a}

[Answer B]
{answer_b}

Reply with a JSON object: {{"verdict": "A"}} if answer A is better, {{"verdict": "B"}} if answer B is \
better, {{"verdict": "C"}} for a tie, with a one-line "reason" beside it, e.g. \
{{"verdict": "A", "reason": "A answers the question; B does not."}}"""

NO_REFERENCE = "(none given)"
FIELDS = ("question", "answer_a", "answer_b", "reference")
MAX_TEMPLATE_CHARS = 8000
VERDICT_SCHEMA = {
    "type": "object",
    "properties": {"verdict": {"type": "string", "enum": ["A", "B", "C"]},
                   "reason": {"type": "string", "maxLength": MAX_REASON_CHARS}},
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}
# Greedy, and short: a dozen tokens of verdict and a reason of at most MAX_REASON_CHARS (a token
# is rarely under 2 characters); an answer cut short still yields its verdict (`read_verdict`).
JUDGE_PARAMS = {"temperature": 0.0, "max_new_tokens": 24 + MAX_REASON_CHARS // 2, "json_schema": VERDICT_SCHEMA}
_REASON = re.compile(r'"reason"\s*:\s*"((?:[^"\\]|\\.)*)')
_BRACKETED = re.compile(r"\[\[\s*([ABC])\s*\]\]")


def template_problem(template: str) -> str:
    """Why a judge template cannot be used ("" if it can)."""
    if len(template) > MAX_TEMPLATE_CHARS:
        return f"The judge template is longer than {MAX_TEMPLATE_CHARS} characters."
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as exc:
        return f"The judge template has a broken placeholder ({exc}); write a literal brace as {{{{ or }}}}."
    unknown = sorted(names - set(FIELDS))
    if unknown:
        return (f"The judge template has unknown placeholders: {', '.join('{' + n + '}' for n in unknown)}; "
                f"it may use {', '.join('{' + f + '}' for f in FIELDS)}.")
    missing = [f for f in ("question", "answer_a", "answer_b") if f not in names]
    if missing:
        return f"The judge template must show {', '.join('{' + f + '}' for f in missing)}."
    return ""


def template_version(template: str) -> int:
    """A number naming this exact template text (stored with each judged verdict)."""
    return zlib.crc32(template.encode()) & 0x7FFFFFFF


def render(template: str, *, question: str, first: str, second: str, reference: str = "") -> str:
    """The judge's prompt with `first` shown as answer A and `second` as answer B."""
    return template.format(question=question, answer_a=first, answer_b=second,
                           reference=reference or NO_REFERENCE)


def read_verdict(text: str) -> str:
    """"A", "B" or "C" from a judge's answer ("" when it says none of them)."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict) and value.get("verdict") in ("A", "B", "C"):
        return value["verdict"]
    found = _BRACKETED.findall(text)
    return found[-1] if found else ""


def read_reason(text: str) -> str:
    """The judge's one-line reason ("" when it gave none), as stored: one line, at most
    MAX_REASON_CHARS. An answer cut short inside its reason keeps what it wrote."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        reason = value.get("reason")
        return one_line(reason) if isinstance(reason, str) else ""
    found = _REASON.search(text)
    if not found:
        return ""
    try:
        return one_line(json.loads(f'"{found.group(1)}"', strict=False))
    except ValueError:
        return one_line(found.group(1))


def verdict_for(order: str, text: str) -> str:
    """The judge's answer under `order`, in the pair's left/right terms (a tie when unreadable)."""
    letter = read_verdict(text)
    if letter == "A":
        return seen_as(order, shown_first_wins=True)
    if letter == "B":
        return seen_as(order, shown_first_wins=False)
    return TIE

