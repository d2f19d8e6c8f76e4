"""Constrained decoding for the transformers engine: llguidance masks the logits.

A constrained row has a `Constraint`: before each pick its llguidance matcher computes
the bitmask of the tokens the grammar allows next (on the CPU, in microseconds), the
row's disallowed logits become -inf, and the picked token is fed back to the matcher.
When the grammar is complete the matcher allows only the end-of-sequence token, so the
row ends as it would on its own EOS. Rows without a constraint are not touched, and a
batch without any constrained row costs nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import llguidance
import llguidance.hf
import llguidance.torch
import torch

from inference.protocol import SamplingParams
from inference.structured import grammar_for

_BITS = torch.arange(32, dtype=torch.int32)


class Grammars:
    """An engine's llguidance view of its tokenizer (built once: about half a second),
    and a fresh matcher per constrained request."""

    def __init__(self, tokenizer, vocab_size: int, eos_ids: frozenset[int] = frozenset()):
        self.vocab_size = vocab_size
        self._tokenizer = tokenizer
        self._eos = sorted(eos_ids) or None  # every end token the engine stops on (chat models have several)
        self._llg: llguidance.LLTokenizer | None = None

    def constraint(self, params: SamplingParams) -> Constraint | None:
        if not params.constrained:
            return None
        if self._llg is None:
            self._llg = llguidance.hf.from_tokenizer(self._tokenizer, n_vocab=self.vocab_size, eos_token=self._eos)
        matcher = llguidance.LLMatcher(self._llg, grammar_for(params.json_schema, params.regex))
        if matcher.is_error():  # checked when the request was made; a worker of another version may differ
            raise ValueError(f"The constraint cannot be used: {matcher.get_error()}")
        return Constraint(matcher, self.vocab_size)


class Constraint:
    """One request's matcher: the mask of its next token, and the tokens it took."""

    def __init__(self, matcher: llguidance.LLMatcher, vocab_size: int):
        self.matcher = matcher
        self.vocab_size = vocab_size
        self._bitmask = torch.zeros((1, (vocab_size + 31) // 32), dtype=torch.int32)

    def allowed(self) -> torch.Tensor:
        """[vocab] bool: the tokens the grammar allows next."""
        llguidance.torch.fill_next_token_bitmask(self.matcher, self._bitmask)
        bits = (self._bitmask[0].unsqueeze(-1) >> _BITS) & 1
        return bits.flatten()[: self.vocab_size].bool()

    def accept(self, token_id: int) -> bool:
        """Feed the picked token (always an allowed one) to the matcher; True when the grammar
        is complete and allows nothing more (the row ends there: a stop, without a pass for EOS)."""
        if not self.matcher.consume_token(token_id):
            raise RuntimeError(f"The grammar refused a token it allowed: {self.matcher.get_error()}")
        return self.matcher.is_stopped()


def mask_logits(logits: torch.Tensor, constraints: Sequence[Constraint | None]) -> torch.Tensor:
    """logits [rows, vocab] with each constrained row's disallowed tokens at -inf (a copy;
    the same tensor when no row is constrained). A model whose logits are wider than the
    tokenizer (padded vocabularies) never picks the extra ids in a constrained row."""
    rows = [(i, c) for i, c in enumerate(constraints) if c is not None]
    if not rows:
        return logits
    allowed = torch.ones(logits.shape, dtype=torch.bool)
    for i, constraint in rows:
        allowed[i] = False
        allowed[i, : constraint.vocab_size] = constraint.allowed()
    return logits.masked_fill(~allowed.to(logits.device), float("-inf"))
