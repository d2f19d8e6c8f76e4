"""What checking answers adds to a suite run, measured side by side on this machine.

A 200-prompt suite, 3 contestants, 5 checks a prompt (contains, regex, a word bound, chrF
similarity to the reference, a time-to-first-token bound): 600 answers to check. The answers are
real: a sample generated here by the packaged SmolLM2-135M-Instruct (Q4_1 GGUF, the transformers
engine, greedy, up to MAX_NEW_TOKENS), each sample answer's wall time measured, reused round robin
over the 600. The check side is what the runner's step does per answer (arena.suite_runs.checking):
the prompt's checks parsed once, then evaluated on the answer, the verdict taken and the results
turned into their stored JSON. The database write (one bulk UPDATE per 200 answers) is left out.

Prints the time per answer of each side (generation: the sample's median, and its fastest) and
the ratio "checks add X% to the answers' generation time" (the run's wall time is at least the
generation time divided by the answers run at once; ARENA_SUITE_IN_FLIGHT answers at once would
multiply the figure by at most that). No absolute time is asserted: the figures are ratios
measured in one run. Last line: one JSON object.
Usage: python bench/checks.py [sample answers]
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from arena.suites import checks
from inference.chunks import Finish
from inference.engine import Engine
from inference.loading import load
from inference.protocol import ModelSpec, SamplingParams
from inference.sources import PACKAGED_SMOLLM2

PROMPTS, CONTESTANTS = 200, 3
MAX_NEW_TOKENS = 128
SPEC = ModelSpec(slug="smollm2-135m", source=PACKAGED_SMOLLM2[0], gguf_file=PACKAGED_SMOLLM2[1])
QUESTIONS = [
    ("What is the refund window for online orders? Answer in two sentences.",
     "You can return an online order for a refund within 30 days of delivery."),
    ("Name the capital of France and one thing it is known for.", "Paris, known for the Eiffel Tower."),
    ("Explain in one paragraph what a hash table is.",
     "A hash table stores key-value pairs in an array, placing each pair at an index computed by hashing its key."),
    ("Give three tips for writing a clear email.",
     "Keep it short, put the request in the first line, and use a subject that says what you need."),
    ("What is 17 times 23? Show the result.", "17 times 23 is 391."),
    ("Write a short apology to a customer whose parcel arrived late.",
     "We are sorry your parcel arrived late. We have refunded the delivery fee."),
]


def checks_of(prompt: int) -> list[dict]:
    """Five checks a prompt, varied a little per prompt as a real suite's would be."""
    return [{"type": "contains", "value": ["refund", "Paris", "hash", "email", "391", "sorry"][prompt % 6],
             "ignore_case": True},
            {"type": "regex", "value": r"\b(?:the|a|an)\s+\w+" if prompt % 2 else r"^\W*[A-Z]"},
            {"type": "words", "min": 3, "max": 150},
            {"type": "similar", "metric": "chrf", "threshold": 0.3},
            {"type": "ttft", "max": 2.0}]


def generate_sample(count: int) -> list[tuple[str, str, dict, float]]:
    """(answer, reference, measures, wall seconds) of `count` answers by the packaged model."""
    engine = Engine.from_loaded(load(SPEC))
    params = SamplingParams(temperature=0.0, max_new_tokens=MAX_NEW_TOKENS)
    for question, _ in QUESTIONS:  # warm: a prompt's first pass may pay one-off costs, not a run's steady ones
        list(engine.stream(engine.encode([{"role": "user", "content": question}]), SamplingParams(max_new_tokens=4)))
    sample = []
    for i in range(count):
        question, reference = QUESTIONS[i % len(QUESTIONS)]
        began = time.time()
        chunks = list(engine.stream(engine.encode([{"role": "user", "content": question}]), params))
        wall = time.time() - began
        finish = chunks[-1]
        assert isinstance(finish, Finish)
        text = "".join(c.text_delta for c in chunks)
        # The measures a check reads, as the worker reports them (inference.protocol.request_metrics).
        measures = {"ttft_s": finish.first_token_time - began if finish.first_token_time else None,
                    "generated_tokens": finish.generated_tokens, "tokens_per_s": None, "total_time_s": wall}
        sample.append((text, reference, measures, wall))
        print(f"  answer {i + 1}: {finish.generated_tokens} tokens in {wall:.2f} s", flush=True)
    return sample


def check_every_answer(sample: list) -> tuple[float, int, int]:
    """Seconds to check PROMPTS x CONTESTANTS answers as the runner does; checks run, answers passing."""
    started = time.perf_counter()
    evaluated = passing = 0
    for prompt in range(PROMPTS):
        parsed = checks.parse_all(checks_of(prompt))  # once per prompt per step (arena.suite_runs.checking)
        for contestant in range(CONTESTANTS):
            text, reference, measures, _ = sample[(prompt * CONTESTANTS + contestant) % len(sample)]
            results = checks.evaluate(parsed, checks.Answer(text, reference, measures))
            verdict = checks.verdict(results)
            json.dumps([r.as_json() for r in results])  # what is stored on the answer
            evaluated += len(results)
            passing += verdict.passed
    return time.perf_counter() - started, evaluated, passing


def main(sample_size: int) -> None:
    print(f"Generating {sample_size} sample answers with {SPEC.slug} (up to {MAX_NEW_TOKENS} new tokens)...")
    sample = generate_sample(sample_size)
    generate_s = statistics.median(wall for *_, wall in sample)  # the machine is shared: the median
    fastest_s = min(wall for *_, wall in sample)
    answers = PROMPTS * CONTESTANTS
    rounds = [check_every_answer(sample) for _ in range(3)]  # the best of three: the machine is shared
    check_s, evaluated, passing = min(rounds)
    per_answer = check_s / answers
    ratio, worst = per_answer / generate_s, per_answer / fastest_s
    print(f"{answers} answers ({PROMPTS} prompts x {CONTESTANTS} contestants), {evaluated} checks, "
          f"{passing} answers passing")
    print(f"generation: {generate_s * 1000:.0f} ms an answer (median of {len(sample)}; "
          f"fastest {fastest_s * 1000:.0f} ms)")
    print(f"checks:     {per_answer * 1000:.3f} ms an answer ({check_s:.2f} s for all {answers})")
    print(f"checks add {100 * ratio:.3f}% to the answers' generation time (goal: < 2%); "
          f"{100 * worst:.3f}% against the fastest answer")
    print(json.dumps({"answers": answers, "checks": evaluated, "sample": len(sample),
                      "generate_ms_per_answer": round(generate_s * 1000, 1),
                      "check_ms_per_answer": round(per_answer * 1000, 4),
                      "fastest_generate_ms": round(fastest_s * 1000, 1),
                      "checks_percent_of_generation": round(100 * ratio, 4),
                      "checks_percent_of_fastest": round(100 * worst, 4)}))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 6)
