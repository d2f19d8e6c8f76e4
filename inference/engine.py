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

    @property
    def supports_batching(self) -> bool:
        """Whether `inference.batched_decoder` may run this engine's requests side by side.

        The batched path re-implements `Engine.stream` over a left-padded KV cache, so
        a subclass with its own `stream` must run alone, and so must a model with
        sliding-window (or other non-plain) cache layers, whose dropped positions
        left padding cannot follow.
        """
        if type(self).stream is not Engine.stream:
            return False
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
        pick = make_token_picker(params, self.device)
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
            step_input = [token_id]
        yield Finish(reason, generated, prompt_tokens, first_time, last_time, detokenizer.flush())

    @torch.inference_mode()  # per step, so no grad-free mode leaks to the caller between yields
    def _next_token(self, new_ids: list[int], cache: DynamicCache, pick: Callable[[torch.Tensor], int]) -> int:
        """One forward pass over the tokens the cache has not seen yet, then one pick."""
        input_ids = torch.tensor([new_ids], dtype=torch.long, device=self.device)
        # logits_to_keep=1: the prompt's other positions never need the LM head.
        logits = self.model(input_ids=input_ids, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
        return pick(logits[0, -1])


def make_token_picker(params: SamplingParams, device: torch.device) -> Callable[[torch.Tensor], int]:
    """Greedy at temperature 0; otherwise temperature + nucleus (top-p) sampling.

    Sampling draws from a torch.Generator seeded with `params.seed` when given, so
    a seeded request is reproducible on the same machine.
    """
    if params.greedy:
        return lambda logits: int(torch.argmax(logits))
    generator = sampling_generator(params, device)
    temperature, top_p = params.temperature, params.top_p

    def sample(logits: torch.Tensor) -> int:
        probs = torch.softmax(logits.float() / temperature, dim=-1)
        if top_p >= 1.0:
            return int(torch.multinomial(probs, 1, generator=generator))
        kept, token_ids = nucleus(probs, top_p)
        return int(token_ids[torch.multinomial(kept, 1, generator=generator)])

    return sample


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
