"""What the classifier is asked and how its reply is read: pure, no Django.

The classifier is a catalogue entry (ARENA_CATEGORY_CLASSIFIER, the packaged SmolLM2 by default)
asked, through the app's normal generation path, which of the category names a prompt belongs to.
Its reply is constrained by a JSON schema whose one field is an enum of exactly those names and
"none", so it cannot answer anything else."""

from __future__ import annotations

import json
from collections.abc import Sequence

NONE = "none"
MAX_PROMPT_CHARS = 1_500  # what of the prompt the classifier reads (a small model's context)
MAX_DESCRIPTION_CHARS = 200


def schema(names: Sequence[str]) -> dict:
    """The reply's JSON schema: {"category": one of `names` or "none"}."""
    return {"type": "object", "properties": {"category": {"enum": [*names, NONE]}}, "required": ["category"],
            "additionalProperties": False}


def params(names: Sequence[str]) -> dict:
    """Greedy, short, constrained to the names."""
    longest = max((len(n) for n in names), default=4)
    return {"temperature": 0.0, "max_new_tokens": 16 + longest, "json_schema": schema(names)}


def question(prompt: str, categories: Sequence[tuple[str, str]]) -> str:
    """The classifier's prompt: the categories (name: description) and the prompt to place."""
    listed = "\n".join(f"- {name}: {description[:MAX_DESCRIPTION_CHARS]}" if description else f"- {name}"
                       for name, description in categories)
    cut = prompt[:MAX_PROMPT_CHARS] + ("…" if len(prompt) > MAX_PROMPT_CHARS else "")
    return ("Classify the user's request into one category.\n\n"
            f"Categories:\n{listed}\n\n"
            f"Request:\n\"\"\"\n{cut}\n\"\"\"\n\n"
            f'Answer in JSON as {{"category": "<name>"}}, with the name of the category that fits best, '
            f'or "{NONE}" if none fits.')


def read(text: str, names: Sequence[str]) -> str | None:
    """The category name a reply picks; None when it says "none" or cannot be read."""
    try:
        picked = json.loads(text).get("category")
    except (ValueError, AttributeError):
        return None
    return picked if isinstance(picked, str) and picked in names else None
