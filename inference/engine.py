"""The generation step: a prompt in, typed chunks out.

`Engine.stream` is a hand-written decode loop over transformers' KV cache rather
than `model.generate`, so the caller sees every token as it is made, can cancel
between any two steps, and gets the timings it reports to users. Greedy output is
the same, token for token, as `model.generate(do_sample=False)`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence

import torch
from transformers import DynamicCache, PreTrainedModel
from transformers.cache_utils import DynamicLayer

from inference.chunks import FINISH_CANCELLED, FINISH_LENGTH, FINISH_STOP, Chunk, Finish, PromptTooLong, TokenChunk
from inference.constrained import Constraint, Grammars, mask_logits
from inference.protocol import SamplingParams, plain_text


class IncrementalDetokenizer:
    """Turns token ids into text deltas that never split a character.

    Byte-level tokenizers spread one character over several tokens, so each step
    decodes a short window (from the last clean boundary) and emits only what the
    new token added, holding back text that still ends in an incomplete sequence.
    Joined, the deltas (plus `flush()`) equal `tokenizer.decode(ids, skip_special_tokens=True)`.
    """

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.prefix_offset = 0  # start of the window: a clean boundary before read_offset
        self.read_offset = 0  # everything before this index has been emitted

    def add(self, token_id: int) -> str:
        self.ids.append(token_id)
        return self._advance(final=False)

    def flush(self) -> str:
        """Whatever is held back, emitted even if incomplete (at the end of a generation)."""
        return self._advance(final=True)

    def _advance(self, final: bool) -> str:
        if self.read_offset == len(self.ids):
            return ""
        emitted = self._decode(self.ids[self.prefix_offset : self.read_offset])
        window = self._decode(self.ids[self.prefix_offset :])
        if len(window) <= len(emitted) or (window.endswith("\ufffd") and not final):
            return ""
        self.prefix_offset, self.read_offset = self.read_offset, len(self.ids)
        return window[len(emitted) :]

    def _decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=True) if ids else ""


def _never() -> bool:
    return False


class Engine:
    counts_tokens = True  # its prompts are token ids (inference.decoding.Prompter)

    def __init__(self, tokenizer, model: PreTrainedModel, context_length: int | None = None, *, base: bool = False):
        self.tokenizer = tokenizer
        self.base = base  # a base model: the prompt as plain text even where the tokenizer has a chat template
        self.model = model.eval()
        self.config = model.config
        self.device = next(model.parameters()).device
        config_max = getattr(self.config.get_text_config(), "max_position_embeddings", None)
        self.context_length = int(context_length or config_max or 2048)
        self.eos_ids = frozenset(_eos_ids(model, tokenizer))
        self.grammars = Grammars(tokenizer, self.config.get_text_config().vocab_size, self.eos_ids)

    @property
    def supports_batching(self) -> bool:
        """Whether `inference.batched_decoder` may run this engine's requests side by side.

        The batched path re-implements `Engine.stream` over a left-padded KV cache, so
        a subclass with its own `stream` must run alone, and so must a model with
        sliding-window (or other non-plain) cache layers, whose dropped positions
        left padding cannot follow.
        """
        return type(self).stream is Engine.stream and self.plain_cache

    @property
    def plain_cache(self) -> bool:
        """Whether the model's cache layers are all plain (no sliding window): what a SlotCache holds."""
        return all(type(layer) is DynamicLayer for layer in DynamicCache(config=self.config).layers)

    @classmethod
    def from_loaded(cls, loaded) -> Engine:
        """From an `inference.loading.LoadedModel`."""
        return cls(loaded.tokenizer, loaded.model, loaded.context_length, base=loaded.base)

    def encode(self, messages: list[dict[str, str]]) -> list[int]:
        """The prompt's token ids: the chat template when the tokenizer has one (and the model
        is not a base model, which would answer a template's markup with blank lines)."""
        if getattr(self.tokenizer, "chat_template", None) and not self.base:
            encoded = self.tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, tokenize=True, return_dict=True
            )
            return list(encoded["input_ids"])
        return list(self.tokenizer(plain_text(messages))["input_ids"])

    def check_context(self, prompt_tokens: int, params: SamplingParams) -> int:
        """How many tokens may be generated: max_new_tokens, clamped to the room left."""
        room = self.context_length - prompt_tokens
        if room < 1:
            raise PromptTooLong(prompt_tokens, self.context_length)
        return min(params.max_new_tokens, room)

    def stream(
        self,
        input_ids: Sequence[int],
        params: SamplingParams,
        should_cancel: Callable[[], bool] = _never,
    ) -> Generator[Chunk, None, None]:
        """Generate from `input_ids`: TokenChunks, then exactly one Finish.

        Raises PromptTooLong (before any work) when the prompt leaves no room.
        `should_cancel` is asked before every forward pass.
        """
        if not input_ids:
            raise ValueError("The prompt is empty.")
        prompt_tokens = len(input_ids)
        max_new_tokens = self.check_context(prompt_tokens, params)
        constraint = self.grammars.constraint(params)
        pick = make_token_picker(params, self.device, constraint)
        detokenizer = IncrementalDetokenizer(self.tokenizer)
        generated = 0
        first_time = last_time = None
        reason = FINISH_LENGTH
        cache = DynamicCache(config=self.config)
        step_input = list(input_ids)
        for _ in range(max_new_tokens):
            if should_cancel():
                reason = FINISH_CANCELLED
                break
            token_id = self._next_token(step_input, cache, pick)
            if token_id in self.eos_ids:
                reason = FINISH_STOP
                break
            last_time = time.time()
            first_time = first_time or last_time
            generated += 1
            yield TokenChunk(token_id, detokenizer.add(token_id))
            if constraint is not None and constraint.accept(token_id):
                reason = FINISH_STOP
                break
            step_input = [token_id]
        yield Finish(reason, generated, prompt_tokens, first_time, last_time, detokenizer.flush())

    @torch.inference_mode()  # per step, so no grad-free mode leaks to the caller between yields
    def _next_token(self, new_ids: list[int], cache: DynamicCache, pick: Callable[[torch.Tensor], int]) -> int:
        """One forward pass over the tokens the cache has not seen yet, then one pick."""
        input_ids = torch.tensor([new_ids], dtype=torch.long, device=self.device)
        # logits_to_keep=1: the prompt's other positions never need the LM head.
        logits = self.model(input_ids=input_ids, cache=cache, use_cache=True, logits_to_keep=1).logits
        return pick(logits[0, -1])


def make_token_picker(
    params: SamplingParams, device: torch.device, constraint: Constraint | None = None
) -> Callable[[torch.Tensor], int]:
    """Greedy at temperature 0; otherwise temperature + nucleus (top-p) sampling; among the
    tokens `constraint` allows, if there is one (`inference.constrained`).

    Sampling draws from a torch.Generator seeded with `params.seed` when given, so
    a seeded request is reproducible on the same machine. It is `TokenSampler` over
    one row, so a request decodes alone as it does in a batch
    (`inference.batched_decoder`), whose rows share one TokenSampler.
    """
    sampler = TokenSampler([params], device)
    return lambda logits: sampler.pick(mask_logits(logits.unsqueeze(0), [constraint]))[0]


class TokenSampler:
    """The next token of each row of a batch of logits, every row with its own parameters.

    Greedy rows take the argmax; sampled rows go through temperature, then nucleus
    (top-p) sampling by inverse CDF: each sampled row draws one uniform number per
    token from its own generator (seeded from its request), so a row's tokens depend
    on its own logits and seed only, never on which other rows share the batch.
    Everything but those draws runs once for all rows, and `pick` reads the result
    back with one `.tolist()` (a second only for a row whose distribution is too flat
    for the top NUCLEUS_FAST_K, which then takes the full sort, with the same draw).
    Built for a fixed list of rows: a batch makes a new one whenever its rows change,
    passing each row's generator on.
    """

    def __init__(
        self,
        params: Sequence[SamplingParams],
        device: torch.device,
        generators: Sequence[torch.Generator | None] | None = None,
    ):
        self.device = device
        self.size = len(params)
        if generators is None:
            generators = [None if p.greedy else sampling_generator(p, device) for p in params]
        self.generators = list(generators)
        nucleus_rows = [i for i, p in enumerate(params) if not p.greedy and p.top_p < 1.0]
        full_rows = [i for i, p in enumerate(params) if not p.greedy and p.top_p >= 1.0]
        self._nucleus = _Group(nucleus_rows, params, self.generators, device)
        self._full = _Group(full_rows, params, self.generators, device)
        self.samples = bool(nucleus_rows or full_rows)

    def pick(self, logits: torch.Tensor) -> list[int]:
        """Each row's token from logits [rows, vocab]."""
        tokens = torch.argmax(logits, dim=-1)
        if not self.samples:
            return tokens.tolist()
        flat = None
        if self._nucleus.rows:
            probs = self._nucleus.probs(logits)
            k = min(NUCLEUS_FAST_K, probs.shape[-1])
            top_probs, top_ids = torch.topk(probs, k)
            drawn, mass = _nucleus_draw(top_probs, top_ids, self._nucleus.top_p, self._nucleus.uniform())
            tokens.index_copy_(0, self._nucleus.index, drawn)
            if k < probs.shape[-1]:
                flat = mass < self._nucleus.top_p  # the nucleus reaches beyond the top k: drawn wrongly
        if self._full.rows:
            probs = self._full.probs(logits)
            tokens.index_copy_(0, self._full.index, _natural_draw(probs, self._full.uniform()))
        if flat is None:
            return tokens.tolist()
        values = torch.cat([tokens, flat.to(tokens.dtype)]).tolist()
        picks, flat_rows = values[: self.size], [j for j, f in enumerate(values[self.size :]) if f]
        if flat_rows:  # rare: a full sort for these rows, with the uniform numbers already drawn
            sub = torch.tensor(flat_rows, device=self.device)
            probs = self._nucleus.probs(logits, sub)
            sorted_probs, sorted_ids = torch.sort(probs, dim=-1, descending=True)
            drawn, _ = _nucleus_draw(sorted_probs, sorted_ids, self._nucleus.top_p.index_select(0, sub),
                                     self._nucleus.last_uniform.index_select(0, sub))
            for j, token in zip(flat_rows, drawn.tolist(), strict=True):
                picks[self._nucleus.rows[j]] = token
        return picks


class _Group:
    """Sampled rows that share one way of drawing: their indices, temperatures, top-p and generators."""

    def __init__(self, rows: list[int], params: Sequence[SamplingParams], generators, device: torch.device):
        self.rows = rows
        self.index = torch.tensor(rows, dtype=torch.long, device=device)
        self.temperature = torch.tensor([[params[i].temperature] for i in rows], dtype=torch.float32, device=device)
        self.top_p = torch.tensor([params[i].top_p for i in rows], dtype=torch.float32, device=device)
        self.generators = [generators[i] for i in rows]
        self.device = device
        self.last_uniform = torch.empty(0, device=device)

    def probs(self, logits: torch.Tensor, sub: torch.Tensor | None = None) -> torch.Tensor:
        """Softmax at each row's temperature, of these rows (or of `sub`, positions within them)."""
        index, temperature = self.index, self.temperature
        if sub is not None:
            index, temperature = index.index_select(0, sub), temperature.index_select(0, sub)
        return torch.softmax(logits.index_select(0, index).float() / temperature, dim=-1)

    def uniform(self) -> torch.Tensor:
        """One number in [0, 1) per row, each from the row's own generator."""
        self.last_uniform = torch.cat(
            [torch.rand(1, generator=g, device=self.device) for g in self.generators]
        )
        return self.last_uniform


def _nucleus_draw(
    sorted_probs: torch.Tensor, sorted_ids: torch.Tensor, top_p: torch.Tensor, uniform: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row, a token from the nucleus of probabilities sorted in descending order (as `nucleus`
    keeps it: the smallest prefix whose mass reaches top_p, always the top one), by inverse CDF
    at `uniform`; and the mass of all the given probabilities."""
    cum = torch.cumsum(sorted_probs, dim=-1)
    kept = ((cum - sorted_probs) < top_p.unsqueeze(-1)).sum(dim=-1, keepdim=True).clamp_(min=1)
    target = uniform.unsqueeze(-1) * cum.gather(-1, kept - 1)
    # right=True: the first position whose cumulative mass passes the target, so never a zero-probability one
    position = torch.minimum(torch.searchsorted(cum, target, right=True), kept - 1)
    return sorted_ids.gather(-1, position).squeeze(-1), cum[:, -1]


def _natural_draw(probs: torch.Tensor, uniform: torch.Tensor) -> torch.Tensor:
    """Per row, a token from the whole distribution (top_p 1), by inverse CDF over vocabulary order."""
    cum = torch.cumsum(probs, dim=-1)
    target = uniform.unsqueeze(-1) * cum[:, -1:]
    return torch.searchsorted(cum, target, right=True).clamp_(max=probs.shape[-1] - 1).squeeze(-1)


def sampling_generator(params: SamplingParams, device: torch.device) -> torch.Generator:
    """The random source of one request: seeded from `params.seed`, so a seeded request
    is reproducible; else freshly seeded (a new Generator's default seed is a constant)."""
    generator = torch.Generator(device=device)
    if params.seed is None:
        generator.seed()
    else:
        generator.manual_seed(params.seed)
    return generator


NUCLEUS_FAST_K = 256


def nucleus(probs: torch.Tensor, top_p: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The smallest set of most likely tokens whose mass reaches top_p (always the top one).

    Returns (probabilities, token ids), sorted, with tokens outside the set at 0.
    A full sort of the vocabulary costs milliseconds per token on a CPU, so the
    top NUCLEUS_FAST_K are tried first; they hold the nucleus unless the
    distribution is very flat.
    """
    k = min(NUCLEUS_FAST_K, probs.numel())
    sorted_probs, token_ids = torch.topk(probs, k)
    if k < probs.numel() and float(sorted_probs.sum()) < top_p:
        sorted_probs, token_ids = torch.sort(probs, descending=True)
    outside = torch.cumsum(sorted_probs, dim=-1) - sorted_probs >= top_p
    return sorted_probs.masked_fill(outside, 0.0), token_ids


def _eos_ids(model: torch.nn.Module, tokenizer) -> set[int]:
    """Every end-of-sequence id the generation config or the tokenizer declares."""
    ids: set[int] = set()
    for value in (
        getattr(getattr(model, "generation_config", None), "eos_token_id", None),
        getattr(tokenizer, "eos_token_id", None),
    ):
        if value is None:
            continue
        ids.update(value if isinstance(value, (list, tuple)) else [value])
    return {int(i) for i in ids}
