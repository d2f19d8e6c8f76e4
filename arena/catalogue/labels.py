"""Short labels that tell catalogue entries apart where space is short (charts, the win-rate
matrix, tables). Names such as "SmolLM2 135M Instruct, llama.cpp Q4_1" and "SmolLM2 135M
Instruct, speculative (prompt lookup)" both read "SmolLM2 135M Inst…" once cut to fit; a label
puts what differs first: "SmolLM2 135M · llama.cpp Q4_1", "SmolLM2 135M · spec".

Pure functions over plain values, so the rule is tested without a database."""

import re

MAX_LABEL = 60
MAX_HEAD = 28
SEP = " · "
# Words a family's variants share that say nothing about how an entry is served.
FILLER = re.compile(r"\s*\b(instruct|chat|it)\b|\s*\(base\)", re.IGNORECASE)
# llama.cpp's quantisation names inside a GGUF file name: Q4_1, Q4_K_M, IQ3_XXS, F16, BF16...
GGUF_QUANT = re.compile(r"(?<![A-Za-z0-9])(I?Q\d(?:_[A-Z0-9]+)*|BF16|F16|F32)(?![A-Za-z0-9])", re.IGNORECASE)


def head(name: str) -> str:
    """The model part of a name: up to its first comma, without filler words, at most MAX_HEAD."""
    first = name.split(",")[0]
    short = " ".join(FILLER.sub("", first).split()) or " ".join(first.split())
    return short if len(short) <= MAX_HEAD else short[: MAX_HEAD - 1].rstrip() + "…"


def gguf_quant(gguf_file: str) -> str:
    found = GGUF_QUANT.findall(gguf_file or "")
    return found[-1].upper() if found else ""


def serving(engine: str, kind: str, precision: str, gguf_file: str, draft_head: str = "") -> list[str]:
    """How the entry is served, as the label's parts after the model."""
    parts = []
    if engine == "llamacpp":
        parts.append(" ".join(filter(None, ["llama.cpp", gguf_quant(gguf_file)])))
    elif engine == "openai":
        parts.append("API")
    elif engine == "server":
        parts.append("server")
    elif precision not in ("", "auto"):
        parts.append(precision)
    if kind == "awq":
        parts.append("AWQ 4-bit")
    elif kind == "speculative":
        parts.append(f"spec ← {draft_head}" if draft_head else "spec")
    return parts


def derive(name: str, engine: str, kind: str, precision: str, gguf_file: str, draft_name: str = "") -> str:
    """The default label of an entry; e.g. "Gemma 3 270M · llama.cpp Q4_K_M · spec"."""
    draft_head = head(draft_name) if draft_name else ""
    label = SEP.join([head(name), *serving(engine, kind, precision, gguf_file, draft_head)])
    return label[:MAX_LABEL]


def unique(label: str, slug: str, taken: set[str]) -> str:
    """`label`, or, if another entry holds it already (case-insensitively), the label with the
    entry's slug (unique) after it."""
    if label.casefold() not in taken:
        return label
    return (label[: MAX_LABEL - len(slug) - len(SEP)] + SEP + slug)[:MAX_LABEL]
