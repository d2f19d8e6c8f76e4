"""Speculative decoding: cheap proposals, verified by one forward pass of the target.

Each step proposes up to k tokens, either from a small draft model or by prompt
lookup (the last n-gram of the context found earlier in the context: what followed
it there is the guess), then runs the target once over the last accepted token plus
the proposals. Decoding on a CPU is bound by reading the weights, so a pass over
k + 1 tokens costs little more than a pass over one, and every accepted proposal is
a token gained.

Greedy: the longest prefix of the proposals that equals the target's argmax is
kept, plus the target's own next token, so the output is the target's own greedy
output. Sampling: the standard rule (Leviathan et al., Chen et al.): keep a proposal
x with probability min(1, p(x) / q(x)), otherwise draw from normalise(max(0, p - q))
and stop; prompt lookup is a draft whose q is one-hot. The output is then
distributed exactly as the target's own samples (with the same temperature and
top-p transform as `Engine`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence

import torch
from transformers import DynamicCache, PreTrainedModel

from inference.chunks import FINISH_CANCELLED, FINISH_LENGTH, FINISH_STOP, Chunk, Finish, TokenChunk
from inference.decode_step import MIN_SPAN, allocate_fixed, make_step, prefill_forward, probe_layers
from inference.engine import Engine, IncrementalDetokenizer, _never, nucleus, sampling_generator
from inference.protocol import SamplingParams
from inference.slots import SlotCache

DEFAULT_DRAFT_TOKENS = 4  # a draft model costs one forward pass per proposal
DEFAULT_LOOKUP_TOKENS = 12  # free to propose; measured best of 4 / 8 / 12 on SmolLM2 (bench/speculative.py)
LOOKUP_MAX_NGRAM = 3
LOOKUP_MIN_NGRAM = 1


def sampling_probs(logits: torch.Tensor, params: SamplingParams) -> torch.Tensor:
    """The distribution `Engine` samples from: temperature, then top-p, renormalised.

    `logits` is (..., vocab); the result has the same shape.
    """
    probs = torch.softmax(logits.float() / params.temperature, dim=-1)
    if params.top_p >= 1.0:
        return probs
    rows = probs.reshape(-1, probs.shape[-1])
    warped = torch.zeros_like(rows)
    for row, out in zip(rows, warped, strict=True):
        kept, token_ids = nucleus(row, params.top_p)
        out.scatter_(0, token_ids, kept)
    warped /= warped.sum(dim=-1, keepdim=True)
    return warped.reshape(probs.shape)


def accept_greedy(proposals: Sequence[int], target_logits: torch.Tensor) -> tuple[int, int]:
    """(proposals kept, the target's next token): row i of `target_logits` predicts proposal i."""
    choices = torch.argmax(target_logits, dim=-1).tolist()
    kept = 0
    while kept < len(proposals) and proposals[kept] == choices[kept]:
        kept += 1
    return kept, choices[kept]


def accept_sampled(
    proposals: Sequence[int],
    draft_probs: torch.Tensor | None,
    probs: torch.Tensor,
    generator: torch.Generator,
) -> tuple[int, int]:
    """(proposals kept, the next token) by the speculative sampling rule.

    `probs` is the target's distribution per position (len(proposals) + 1 rows),
    `draft_probs` the draft's (one row per proposal, same vocabulary), or None when
    proposals were deterministic (prompt lookup: q is one-hot).
    """
    for i, token in enumerate(proposals):
        p = probs[i]
        q_token = float(draft_probs[i, token]) if draft_probs is not None else 1.0
        if float(torch.rand((), generator=generator)) * q_token < float(p[token]):
            continue
        if draft_probs is None:
            residual = p.clone()
            residual[token] = 0.0
        else:
            residual = torch.clamp(p - draft_probs[i], min=0.0)
        if float(residual.sum()) <= 0.0:  # only by rounding: p == q would have accepted
            residual = p
        return i, int(torch.multinomial(residual, 1, generator=generator))
    return len(proposals), int(torch.multinomial(probs[len(proposals)], 1, generator=generator))


def prompt_lookup(tokens: Sequence[int], limit: int, max_ngram: int, min_ngram: int) -> list[int]:
    """Up to `limit` tokens that followed the latest earlier occurrence of the context's last n-gram.

    Longer n-grams are tried first (a longer match is a better predictor).
    """
    if limit < 1:
        return []
    length = len(tokens)
    for n in range(min(max_ngram, length - 1), min_ngram - 1, -1):
        pattern = list(tokens[length - n :])
        first = pattern[0]
        # Latest start first: recent text predicts the continuation best.
        for start in range(length - n - 1, -1, -1):
            if tokens[start] == first and list(tokens[start : start + n]) == pattern:
                return list(tokens[start + n : start + n + limit])
    return []


class PromptLookupProposer:
    def __init__(self, max_ngram: int = LOOKUP_MAX_NGRAM, min_ngram: int = LOOKUP_MIN_NGRAM):
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram

    def propose(self, tokens: Sequence[int], limit: int) -> tuple[list[int], torch.Tensor | None]:
        return prompt_lookup(tokens, limit, self.max_ngram, self.min_ngram), None

    def keep(self, length: int) -> None:
        """Nothing to roll back: lookups are stateless."""


class DraftModelProposer:
    """A draft model with its own KV cache, generating proposals one token at a time."""

    def __init__(
        self,
        model: PreTrainedModel,
        params: SamplingParams,
        generator: torch.Generator,
        vocab_size: int,
    ):
        self.model = model
        self.params = params
        self.generator = generator
        self.vocab_size = vocab_size  # the target's: draft rows are cut or padded to it
        self.device = next(model.parameters()).device
        self.cache = new_cache(model)
        self.seen = 0  # how many tokens of the sequence the cache holds

    @torch.inference_mode()
    def propose(self, tokens: Sequence[int], limit: int) -> tuple[list[int], torch.Tensor | None]:
        proposals: list[int] = []
        rows: list[torch.Tensor] = []
        new_ids = list(tokens[self.seen :])
        for _ in range(limit):
            logits = self._forward(new_ids)
            self.seen += len(new_ids)
            if self.params.greedy:
                token = int(torch.argmax(logits))
            else:
                q = sampling_probs(logits, self.params)
                token = int(torch.multinomial(q, 1, generator=self.generator))
                rows.append(q)
            proposals.append(token)
            new_ids = [token]
        return proposals, (torch.stack(rows) if rows else None)

    def keep(self, length: int) -> None:
        """The sequence now agrees with what the cache saw for its first `length` tokens."""
        self.seen = min(self.seen, length)
        rollback(self.cache, self.seen)

    def _forward(self, new_ids: list[int]) -> torch.Tensor:
        input_ids = torch.tensor([new_ids], dtype=torch.long, device=self.device)
        out = self.model(input_ids=input_ids, cache=self.cache, use_cache=True, logits_to_keep=1)
        logits = out.logits[0, -1]
        if logits.shape[-1] >= self.vocab_size:
            return logits[: self.vocab_size]
        # A draft with a smaller (unpadded) vocabulary never proposes the target's extra ids.
        return torch.nn.functional.pad(logits, (0, self.vocab_size - logits.shape[-1]), value=float("-inf"))


class SpeculativeEngine(Engine):
    """`Engine`'s interface (encode / check_context / stream), decoding speculatively.

    `draft` None means prompt-lookup decoding. `Finish.proposed_tokens` and
    `accepted_tokens` report how many proposals were verified and kept. `slots`: verify over
    the engine's one fixed slot (SlotVerifier: captured passes where `graphs` and a GPU allow,
    compiled first when `compiled`); None: on a CUDA device, where that is the fast path (on
    a CPU a pass costs the same either way, and a DynamicCache per stream holds no memory).
    A model with sliding-window layers always verifies over a DynamicCache.
    """

    def __init__(
        self,
        tokenizer,
        model: PreTrainedModel,
        context_length: int | None = None,
        draft: PreTrainedModel | None = None,
        num_speculative_tokens: int = 0,
        max_ngram: int = LOOKUP_MAX_NGRAM,
        min_ngram: int = LOOKUP_MIN_NGRAM,
        *,
        base: bool = False,
        slots: bool | None = None,
        graphs: bool = True,
        compiled: bool = False,
    ):
        super().__init__(tokenizer, model, context_length, base=base)
        self.draft = draft.eval() if draft is not None else None
        default = DEFAULT_DRAFT_TOKENS if draft is not None else DEFAULT_LOOKUP_TOKENS
        self.num_speculative_tokens = num_speculative_tokens or default
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self.vocab_size = int(self.config.get_text_config().vocab_size)
        if slots is None:
            slots = self.device.type == "cuda"
        self.slot_verifier = SlotVerifier(model, self.device, self.context_length, self.num_speculative_tokens + 1,
                                          graphs=graphs, compiled=compiled) if slots and self.plain_cache else None
        self.step_kind = self.slot_verifier.step.description if self.slot_verifier else self._dynamic_reason(slots)

    def _dynamic_reason(self, slots: bool) -> str:
        """Why this engine verifies over a DynamicCache per stream (for the status page)."""
        if not self.plain_cache:
            why = "its sliding-window layers"
        elif self.device.type != "cuda" and not slots:
            why = f"no CUDA graphs on {self.device.type}"
        else:
            why = "slots turned off"
        return f"eager (verify passes over a DynamicCache: {why})"

    @classmethod
    def from_loaded(cls, loaded, *, graphs: bool = True, compiled: bool = False) -> SpeculativeEngine:
        return cls(
            loaded.tokenizer,
            loaded.model,
            loaded.context_length,
            draft=loaded.draft,
            num_speculative_tokens=loaded.num_speculative_tokens,
            base=loaded.base,
            graphs=graphs,
            compiled=compiled,
        )

    def stream(
        self,
        input_ids: Sequence[int],
        params: SamplingParams,
        should_cancel: Callable[[], bool] = _never,
    ) -> Generator[Chunk, None, None]:
        """As `Engine.stream`; `should_cancel` is asked before every token (so before every pass).

        A constrained request (a JSON schema or regex) decodes without speculation, through
        `Engine.stream`'s masked loop: proposals would have to be checked against the grammar
        token by token, and the target's pass would need one mask per position."""
        if params.constrained:
            yield from super().stream(input_ids, params, should_cancel)
            return
        if not input_ids:
            raise ValueError("The prompt is empty.")
        prompt_tokens = len(input_ids)
        max_new_tokens = self.check_context(prompt_tokens, params)
        generator = sampling_generator(params, self.device)
        proposer = self._proposer(params, generator)
        detokenizer = IncrementalDetokenizer(self.tokenizer)
        tokens = list(input_ids)
        verifier = self._verifier(tokens)  # holds a prefix of `tokens`; each pass feeds the rest
        try:
            generated = proposed = accepted = 0
            first_time = last_time = None
            reason = FINISH_LENGTH
            while generated < max_new_tokens and reason == FINISH_LENGTH:
                if should_cancel():
                    reason = FINISH_CANCELLED
                    break
                room = max_new_tokens - generated - 1  # the target adds one token of its own
                proposals, draft_probs = proposer.propose(tokens, min(self.num_speculative_tokens, room))
                kept, next_token = self._verify(verifier, tokens, proposals, draft_probs, params, generator)
                proposed += len(proposals)
                accepted += kept
                verifier.keep(len(tokens) + kept)  # drop the rejected proposals' positions
                proposer.keep(len(tokens) + kept)
                for index, token_id in enumerate([*proposals[:kept], next_token]):
                    if index > 0 and should_cancel():
                        reason = FINISH_CANCELLED
                        break
                    if token_id in self.eos_ids:
                        reason = FINISH_STOP
                        break
                    tokens.append(token_id)
                    last_time = time.time()
                    first_time = first_time or last_time
                    generated += 1
                    yield TokenChunk(token_id, detokenizer.add(token_id))
        finally:
            verifier.release()
        yield Finish(
            reason,
            generated,
            prompt_tokens,
            first_time,
            last_time,
            detokenizer.flush(),
            proposed_tokens=proposed,
            accepted_tokens=accepted,
        )

    def _proposer(self, params: SamplingParams, generator: torch.Generator):
        if self.draft is None:
            return PromptLookupProposer(self.max_ngram, self.min_ngram)
        return DraftModelProposer(self.draft, params, generator, self.vocab_size)

    def _verifier(self, tokens: list[int]) -> DynamicVerifier | SlotVerifier:
        """The engine's slot when it has one and no other stream holds it; else a DynamicCache."""
        slot = self.slot_verifier
        if slot is None or slot.busy:
            return DynamicVerifier(self.model)
        slot.start(tokens)
        return slot

    @torch.inference_mode()  # per step, so no grad-free mode leaks to the caller between yields
    def _verify(
        self,
        verifier: DynamicVerifier | SlotVerifier,
        tokens: list[int],
        proposals: list[int],
        draft_probs: torch.Tensor | None,
        params: SamplingParams,
        generator: torch.Generator,
    ) -> tuple[int, int]:
        """One target pass over the tokens the cache lacks plus the proposals: (proposals kept, next token)."""
        logits = verifier.logits(tokens, proposals)
        if params.greedy:
            return accept_greedy(proposals, logits)
        return accept_sampled(proposals, draft_probs, sampling_probs(logits, params), generator)


class DynamicVerifier:
    """The target's passes over a DynamicCache, eager: any model (sliding-window layers roll
    back too), and a second stream while the engine's slot is taken."""

    def __init__(self, model: PreTrainedModel):
        self.model = model
        self.cache = new_cache(model)

    def logits(self, tokens: Sequence[int], proposals: list[int]) -> torch.Tensor:
        """[len(proposals) + 1, vocab]: row i predicts proposal i, the last the token after them."""
        step = [*tokens[self.cache.get_seq_length() :], *proposals]
        input_ids = torch.tensor([step], dtype=torch.long, device=self.model.device)
        keep = len(proposals) + 1
        return self.model(input_ids=input_ids, cache=self.cache, use_cache=True, logits_to_keep=keep).logits[0]

    def keep(self, length: int) -> None:
        rollback(self.cache, length)

    def release(self) -> None:
        """Nothing held."""


class SlotVerifier:
    """The target's passes over one slot of a SlotCache (inference.slots), at a fixed shape.

    The prompt but its last token is prefilled into the slot; every pass then feeds the last
    token and the proposals, padded to `queries` (k + 1) tokens at the columns that follow, so
    its shapes depend only on the span: on a GPU each pass is a replayed CUDA graph
    (inference.decode_step, one per span bucket, captured when the engine is built), not an
    eager forward of a thousand kernels. A rejected proposal's column (and a padding token's)
    lies beyond every later query's own column, so the mask hides it until a pass overwrites
    it. One stream at a time holds the slot (`busy`); the engine gives another a DynamicVerifier.
    """

    PREFILL_CHUNK = 512  # prompt tokens a prefill pass takes (bounds its activations)

    def __init__(self, model: PreTrainedModel, device: torch.device, context_length: int, queries: int, *,
                 graphs: bool = True, compiled: bool = False):
        self.model, self.device, self.queries = model, device, queries
        fixed = device.type == "cuda"
        layers = model.config.get_text_config().num_hidden_layers
        self.cache = SlotCache(layers, slots=1, columns=context_length + queries, fixed=fixed)
        if fixed:
            allocate_fixed(self.cache, model, device, memory_fraction=0.5)
        else:
            self.cache.allocate_like(probe_layers(model, device), 1, min(MIN_SPAN, context_length + queries))
        self.step = make_step(model, self.cache, device, 1, graphs=graphs, compiled=compiled, queries=queries)
        self.held = 0  # columns of the slot that hold the sequence's tokens
        self.busy = False

    @torch.inference_mode()
    def start(self, tokens: list[int]) -> None:
        """Prefill all of `tokens` but the last, and take the slot."""
        prompt = tokens[:-1]
        self.cache.reserve(1, len(tokens) + self.queries)
        for start in range(0, len(prompt), self.PREFILL_CHUNK):
            chunk = torch.tensor([prompt[start : start + self.PREFILL_CHUNK]], dtype=torch.long, device=self.device)
            prefill_forward(self.model, self.cache, 0, chunk, start)
        self.held = len(prompt)
        self.busy = True

    def logits(self, tokens: Sequence[int], proposals: list[int]) -> torch.Tensor:
        feed = [*tokens[self.held :], *proposals]
        if len(feed) > self.queries:
            raise ValueError(f"{len(feed)} tokens for a pass of {self.queries}")
        self.cache.reserve(1, self.held + self.queries + 1)
        padded_feed = feed + [0] * (self.queries - len(feed))
        logits = self.step([padded_feed], [list(range(self.held, self.held + self.queries))])[0]
        return logits[len(feed) - len(proposals) - 1 : len(feed)]

    def keep(self, length: int) -> None:
        self.held = length

    def release(self) -> None:
        self.busy = False


def new_cache(model: PreTrainedModel) -> DynamicCache:
    """A KV cache that can be rolled back: sliding-window layers keep what they would
    drop until the next `rollback` (without this, Gemma-style models could not rewind)."""
    cache = DynamicCache(config=model.config)
    cache.activate_past_recording()
    return cache


def rollback(cache: DynamicCache, length: int) -> None:
    """Keep the first `length` positions. Called after every verification, even with
    nothing to drop, because that is also when sliding-window layers trim themselves."""
    cache.crop(min(0, length - cache.get_seq_length()))  # crop takes minus the count to remove
