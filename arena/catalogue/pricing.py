"""What an answer costs, from its entry's price (pure: no Django, no clock).

An entry carries either prices per million tokens (a hosted API's: input and output priced
apart) or a price per hour of the machine that serves it (a GPU rented by the hour). With
per-token prices an answer costs its prompt tokens at the input price plus its generated tokens
at the output price. With an hourly price it costs its generation time at that price: the time
to its first token plus its other tokens at its measured decode rate (tokens/s), so an answer
that decodes twice as fast costs half. An hourly price is the cost of a machine that serves one
answer at a time: one that serves several at once (a batch) costs less per answer, so this is
an upper bound for such a machine.

Prices are in US dollars. A figure that was not measured (no token counts, no decode rate) gives
no cost (None), never a guess."""

from __future__ import annotations

import math
from dataclasses import dataclass

MILLION = 1_000_000
HOUR_S = 3600.0
MAX_PRICE = 1_000_000.0  # dollars per million tokens or per hour: beyond it, a typing error


@dataclass(frozen=True)
class Price:
    """An entry's price: `input_per_mtok` and `output_per_mtok` (dollars per million prompt and
    generated tokens) together, or `per_hour` (dollars per hour of the machine)."""

    input_per_mtok: float | None = None
    output_per_mtok: float | None = None
    per_hour: float | None = None

    @property
    def per_token(self) -> bool:
        return self.input_per_mtok is not None or self.output_per_mtok is not None

    @property
    def hourly(self) -> bool:
        return self.per_hour is not None

    def describe(self) -> str:
        """The price in words, as the pages show it ("$0.15 / $0.60 per million tokens in / out")."""
        if self.per_token:
            tokens = f"${_money(self.input_per_mtok or 0.0)} / ${_money(self.output_per_mtok or 0.0)}"
            return f"{tokens} per million tokens in / out"
        return f"${_money(self.per_hour or 0.0)} per hour of the machine"


@dataclass(frozen=True)
class Usage:
    """What an answer used, as its generation measured it (None: not measured)."""

    prompt_tokens: int | None
    generated_tokens: int | None
    ttft_s: float | None = None
    tokens_per_s: float | None = None


def problem(price: Price) -> tuple[str, str] | None:
    """Why a price cannot be stored: (the field, a sentence), or None."""
    for field, value in (("price_input_per_mtok", price.input_per_mtok),
                         ("price_output_per_mtok", price.output_per_mtok), ("price_per_hour", price.per_hour)):
        if value is not None and not 0.0 <= value <= MAX_PRICE:
            return field, f"A price is 0 to {MAX_PRICE:,.0f} dollars."
    if price.per_token and price.hourly:
        return "price_per_hour", ("Give prices per million tokens (a hosted API) or a price per hour of the machine, "
                                  "not both.")
    if price.per_token and (price.input_per_mtok is None or price.output_per_mtok is None):
        missing = "price_input_per_mtok" if price.input_per_mtok is None else "price_output_per_mtok"
        return missing, "Give both prices per million tokens, input and output (0 where one is free)."
    return None


def generation_seconds(usage: Usage) -> float | None:
    """The answer's generation time: its time to first token, then its other tokens at its decode
    rate (the rate is measured after the first token). None when what it needs was not measured."""
    tokens = usage.generated_tokens
    if tokens is None or usage.ttft_s is None:
        return None
    if tokens <= 1:
        return usage.ttft_s
    if not usage.tokens_per_s or usage.tokens_per_s <= 0:
        return None
    return usage.ttft_s + (tokens - 1) / usage.tokens_per_s


def cost(price: Price | None, usage: Usage) -> float | None:
    """What the answer cost in dollars (None: no price, or not measured)."""
    if price is None:
        return None
    if price.per_token:
        if usage.prompt_tokens is None or usage.generated_tokens is None:
            return None
        return (usage.prompt_tokens * (price.input_per_mtok or 0.0)
                + usage.generated_tokens * (price.output_per_mtok or 0.0)) / MILLION
    if price.hourly:
        seconds = generation_seconds(usage)
        return None if seconds is None else seconds * (price.per_hour or 0.0) / HOUR_S
    return None


def _money(value: float) -> str:
    """A price as typed: no trailing zeros (0.15, 2, 0.0004)."""
    return f"{value:.6f}".rstrip("0").rstrip(".") if value else "0"


def money(value: float | None) -> str:
    """A cost as the pages show it: dollars, written out (no exponent), three significant figures
    ("$0.0000153", "$0.0123", "$1.23", "$1,234")."""
    if value is None:
        return ""
    if value <= 0:
        return "$0"
    if value >= 100:
        return f"${value:,.0f}"
    decimals = max(2, 2 - math.floor(math.log10(value)))
    return f"${value:.{decimals}f}"
