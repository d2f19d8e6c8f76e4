"""Speculative decoding on the real SmolLM2-135M-Instruct (packaged Q4_1 GGUF), on this machine.

Greedy decode tokens/s of `SpeculativeEngine` over the plain `Engine` on input-grounded
prompts (rewriting and summarising a given paragraph), for prompt lookup at several
proposal lengths / n-gram sizes, and for SmolLM2 as its own draft (same weights: the
acceptance rate must be about 100%; it checks the machinery, not a speed-up). Every run
also checks that the speculative output is token for token the plain engine's.

Decode tokens/s is (generated - 1) / (last token time - first token time), as the
worker reports it; each engine's best of ROUNDS interleaved runs. Prints a table, then one JSON object as its last line.
Usage: python bench/speculative.py [max_new_tokens]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from inference.chunks import Finish, TokenChunk
from inference.engine import Engine
from inference.loading import load
from inference.protocol import ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2
from inference.speculative import SpeculativeEngine

PARAGRAPH = (
    "The lighthouse keeper climbed the stairs every evening at dusk, carrying a small lamp and a "
    "notebook in which he recorded the weather, the ships that passed, and the number of gulls "
    "resting on the rocks below. He had done this for thirty years, and in all that time he had "
    "never missed a single night, not even during the great storm that tore the roof from the "
    "boathouse and scattered the fishing nets across the bay. The villagers said he was stubborn, "
    "but they also said that no ship had run aground on the point since he arrived. When the "
    "harbour master finally offered him an electric beacon that would run by itself, he thanked "
    "him politely, put the letter in a drawer, and went on climbing the stairs every evening, "
    "because he believed that a light should be kept by someone who was awake to see it."
)
TYPOS = {
    "lighthouse": "lighthosue",
    "weather": "wether",
    "passed": "pased",
    "single": "singel",
    "scattered": "scatered",
    "villagers": "vilagers",
    "finally": "finaly",
    "believed": "beleived",
    "because": "becuase",
    "politely": "politly",
}


def with_typos(text: str) -> str:
    for right, wrong in TYPOS.items():
        text = text.replace(right, wrong, 1)
    return text


PROMPTS = {
    "rewrite": "Rewrite the following text, fixing typos:\n\n" + with_typos(PARAGRAPH),
    "summarise": "Summarise:\n\n" + PARAGRAPH,
}
# (k, max n-gram, min n-gram); k=0 is the engine's default
LOOKUP_SETTINGS = [(4, 3, 1), (8, 3, 1), (12, 3, 1), (16, 3, 1)]
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
THREADS = int(
    os.environ.get("BENCH_THREADS", "0")
)  # 0: torch's default  # the machine is shared: each engine's best round counts
SPEC = ModelSpec(slug="smollm2-spec", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1], kind="speculative")
SELF_DRAFT = ModelSpec(
    slug="smollm2-self-draft",
    source=PACKAGED_SMOLLM2[0],
    gguf_file=PACKAGED_SMOLLM2[1],
    kind="speculative",
    draft_source=PACKAGED_SMOLLM2[0],
    draft_gguf_file=PACKAGED_SMOLLM2[1],
)


def run(engine, input_ids, params) -> tuple[list[int], Finish]:
    chunks = list(engine.stream(input_ids, params))
    return [c.token_id for c in chunks if isinstance(c, TokenChunk)], chunks[-1]


def decode_rate(finish: Finish) -> float:
    return (finish.generated_tokens - 1) / (finish.last_token_time - finish.first_token_time)


def acceptance(finish: Finish) -> float | None:
    return finish.accepted_tokens / finish.proposed_tokens if finish.proposed_tokens else None


def main(max_new_tokens: int) -> None:
    if THREADS:
        torch.set_num_threads(THREADS)
    params = SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens)
    loaded = load(SPEC)
    self_draft = load(SELF_DRAFT)
    engines = {"plain": Engine.from_loaded(loaded)}
    for k, max_ngram, min_ngram in LOOKUP_SETTINGS:
        engine = SpeculativeEngine(
            loaded.tokenizer,
            loaded.model,
            loaded.context_length,
            num_speculative_tokens=k,
            max_ngram=max_ngram,
            min_ngram=min_ngram,
        )
        engines[f"lookup k={engine.num_speculative_tokens} n={max_ngram}..{min_ngram}"] = engine
    engine = SpeculativeEngine.from_loaded(self_draft)
    engines[f"self-draft k={engine.num_speculative_tokens}"] = engine
    results = []
    for name, prompt in PROMPTS.items():
        input_ids = engines["plain"].encode([{"role": "user", "content": prompt}])
        run(engines["plain"], input_ids, SamplingParams(temperature=0.0, max_new_tokens=8))  # warm-up
        best: dict[str, tuple[float, list[int], Finish]] = {}
        for _ in range(ROUNDS):  # interleaved, so a busy spell hits every engine alike
            for label, engine in engines.items():
                if label.startswith("self-draft") and name != "rewrite":
                    continue  # a check of the machinery: one prompt is enough
                ids, finish = run(engine, input_ids, params)
                print(f"  {label}: {decode_rate(finish):.1f} tokens/s", flush=True)
                if label not in best or decode_rate(finish) > best[label][0]:
                    best[label] = (decode_rate(finish), ids, finish)
        base_rate, reference, _ = best.pop("plain")
        print(f"{name}: {len(input_ids)} prompt tokens, plain {len(reference)} tokens at {base_rate:.1f} tokens/s")
        for label, (_, ids, finish) in best.items():
            results.append(report(name, label, base_rate, ids, reference, finish))
    print(json.dumps(results))


def report(prompt: str, method: str, base_rate: float, ids, reference, finish: Finish) -> dict:
    rate = decode_rate(finish)
    row = {
        "prompt": prompt,
        "method": method,
        "plain_tokens_per_s": round(base_rate, 2),
        "spec_tokens_per_s": round(rate, 2),
        "ratio": round(rate / base_rate, 2),
        "acceptance_rate": round(acceptance(finish) or 0.0, 3),
        "proposed": finish.proposed_tokens,
        "accepted": finish.accepted_tokens,
        "tokens": finish.generated_tokens,
        "identical": ids == reference,
    }
    print(
        f"  {method:22s} plain {base_rate:5.1f}  speculative {rate:6.1f} tok/s  x{row['ratio']:.2f}  "
        f"acceptance {row['acceptance_rate']:.0%} "
        f"({finish.accepted_tokens}/{finish.proposed_tokens})  identical={row['identical']}"
    )
    return row


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
