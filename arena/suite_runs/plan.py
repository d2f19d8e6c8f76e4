"""What a suite run does next. Pure: no Django, no Redis, no clock (tested on plain values).

A run has every contestant answer every prompt of its suite, then (with a model judge) has
pairs of those answers judged, each pair twice, once in each order (arena.battles.judging).
Which pairs: round robin, every pair of contestants on every prompt; knockout, a bracket per
prompt in which each pair's winner meets the next, so a prompt needs one pair fewer than it has
contestants. A run's state is the generations it holds (`Slot`s: an answer, or one order of a
judgement) and the verdicts it recorded; `plan` says which generations to start now (at most
`in_flight` live at once), which verdicts to record, and how far the run is.

Order of work: answers contestant by contestant (one model busy at a time, its requests
batched), judging only once every answer has settled (the judge's model is not loaded while a
contestant's is still needed). A failed generation is tried again, up to `MAX_ATTEMPTS`
generations in all; after that its answer is missing for good: its pairs are not judged (in a
knockout the other side goes through), and the run goes on. Recomputing the plan from what the
database holds is what makes a run resumable: nothing that finished is ever started again.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from arena.battles.judging import LEFT, ORDERS, RIGHT, combine_orders

ROUND_ROBIN, KNOCKOUT = "round_robin", "knockout"
FORMATS = (ROUND_ROBIN, KNOCKOUT)
MAX_ATTEMPTS = 3

MISSING, LIVE, DONE, FAILED = "missing", "live", "done", "failed"
JUDGE = -1  # upcoming(): the judge's model (catalogue ids are positive)

Answer = tuple[int, int]  # (prompt, contestant)
Pair = tuple[int, int, int]  # (prompt, left contestant, right contestant)
Judgement = tuple[int, int, int, str]  # a pair and the order shown (arena.battles.judging.ORDERS)


@dataclass(frozen=True)
class Slot:
    """The latest generation for one answer or judgement: its state, and how many were made.
    `verdict`: a finished judgement's verdict in the pair's left/right terms."""

    state: str = MISSING
    attempts: int = 0
    verdict: str = ""

    @property
    def settled(self) -> bool:
        """Done, or failed with no attempt left."""
        return self.state == DONE or (self.state == FAILED and self.attempts >= MAX_ATTEMPTS)

    @property
    def wants_start(self) -> bool:
        return self.state == MISSING or (self.state == FAILED and self.attempts < MAX_ATTEMPTS)


@dataclass
class RunState:
    prompts: list[int]
    contestants: list[int]  # in seed order (a knockout's bracket order)
    format: str = ROUND_ROBIN
    judged: bool = True  # a model judge decides the pairs
    answers: dict[Answer, Slot] = field(default_factory=dict)
    judgements: dict[Judgement, Slot] = field(default_factory=dict)
    verdicts: dict[Pair, str] = field(default_factory=dict)  # recorded outcomes
    seed: int = 0  # a knockout's coin for tied pairs

    def answer(self, key: Answer) -> Slot:
        return self.answers.get(key, Slot())

    def judgement(self, key: Judgement) -> Slot:
        return self.judgements.get(key, Slot())


@dataclass
class Plan:
    start_answers: list[Answer] = field(default_factory=list)
    start_judgements: list[Judgement] = field(default_factory=list)
    record: list[tuple[Pair, str]] = field(default_factory=list)  # (pair, outcome) to store now
    done: int = 0
    total: int = 0

    @property
    def finished(self) -> bool:
        return self.done >= self.total and not (self.start_answers or self.start_judgements or self.record)


def plan(state: RunState, in_flight: int) -> Plan:
    """The next steps of a run: never more than `in_flight` generations live at once."""
    out = Plan()
    room = in_flight - _live(state)
    answer_keys = [(p, c) for c in state.contestants for p in state.prompts]
    out.total = len(answer_keys) + (2 * _pair_count(state) if state.judged else 0)
    out.done = sum(state.answer(key).settled for key in answer_keys)
    for key in answer_keys:
        if room > 0 and state.answer(key).wants_start:
            out.start_answers.append(key)
            room -= 1
    if not state.judged or out.done < len(answer_keys):
        return out
    judged, forfeited = pairs(state)
    out.done += 2 * forfeited
    for pair in judged:
        done, starts, outcome = _judge_pair(state, pair)
        out.done += done
        for judgement in starts:
            if room > 0:
                out.start_judgements.append(judgement)
                room -= 1
        if outcome and pair not in state.verdicts:
            out.record.append((pair, outcome))
    return out


def upcoming(state: RunState) -> int | None:
    """Whose model is needed next, after the answers under way (to warm it while they run): the
    next contestant with answers to start, or `JUDGE` once every answer has started (in a
    judged run); None when nothing is under way or nothing follows."""
    busy = {contestant for (_, contestant), slot in state.answers.items() if slot.state == LIVE}
    if not busy:
        return None
    for contestant in state.contestants:
        if contestant not in busy and any(state.answer((p, contestant)).wants_start for p in state.prompts):
            return contestant
    return JUDGE if state.judged else None


def pairs(state: RunState) -> tuple[list[Pair], int]:
    """The pairs to judge now, both answers present (a knockout's later rounds appear as its
    earlier verdicts are recorded), and how many pairs were decided without a judgement
    because an answer is missing for good."""
    out: list[Pair] = []
    forfeited = 0
    for prompt in state.prompts:
        if state.format == KNOCKOUT:
            judged, lost = knockout_pairs(state, prompt)
        else:
            every = list(itertools.combinations(state.contestants, 2))
            judged = [(prompt, a, b) for a, b in every if _answered(state, prompt, a) and _answered(state, prompt, b)]
            lost = len(every) - len(judged)
        out.extend(judged)
        forfeited += lost
    return out, forfeited


def knockout_pairs(state: RunState, prompt: int) -> tuple[list[Pair], int]:
    """The bracket of one prompt, as far as its verdicts go, and its forfeits: each round pairs
    neighbours (an odd one out goes through alone); a side without an answer loses without a
    judgement (a forfeit); a tie goes to a coin seeded by the run, the prompt and the pair."""
    out: list[Pair] = []
    forfeited = 0
    entrants = list(state.contestants)
    while len(entrants) > 1:
        winners: list[int] = []
        for left, right in _neighbours(entrants):
            if right is None:
                winners.append(left)
            elif not (_answered(state, prompt, left) and _answered(state, prompt, right)):
                forfeited += 1
                winners.append(right if _answered(state, prompt, right) else left)
            else:
                pair = (prompt, left, right)
                out.append(pair)
                if pair in state.verdicts:
                    winners.append(knockout_winner(pair, state.verdicts[pair], state.seed))
        if len(winners) < (len(entrants) + 1) // 2:
            break  # the next round waits for this one's verdicts
        entrants = winners
    return out, forfeited


def knockout_winner(pair: Pair, outcome: str, seed: int) -> int:
    _, left, right = pair
    if outcome == LEFT:
        return left
    if outcome == RIGHT:
        return right
    return random.Random(f"{seed}:{pair}").choice((left, right))


def _neighbours(entrants: list[int]) -> Iterable[tuple[int, int | None]]:
    for i in range(0, len(entrants), 2):
        yield entrants[i], (entrants[i + 1] if i + 1 < len(entrants) else None)


def _pair_count(state: RunState) -> int:
    """Pairs a run judges if every answer arrives (its progress bar's total)."""
    n = len(state.contestants)
    per_prompt = n - 1 if state.format == KNOCKOUT else n * (n - 1) // 2
    return per_prompt * len(state.prompts)


def _judge_pair(state: RunState, pair: Pair) -> tuple[int, list[Judgement], str]:
    """For one pair: its settled judgements (progress), those to start, and its outcome once both
    orders are in ("" while waiting; a tie when one order failed for good)."""
    keys = [(*pair, order) for order in ORDERS]
    slots = [state.judgement(key) for key in keys]
    starts = [key for key, slot in zip(keys, slots, strict=True) if slot.wants_start]
    done = sum(slot.settled for slot in slots)
    outcome = ""
    if all(slot.settled for slot in slots):
        verdicts = [slot.verdict if slot.state == DONE else "" for slot in slots]
        outcome = combine_orders(*verdicts) if all(verdicts) else "tie"
    return done, starts, outcome


def _answered(state: RunState, prompt: int, contestant: int) -> bool:
    return state.answer((prompt, contestant)).state == DONE


def _live(state: RunState) -> int:
    return sum(slot.state == LIVE for slot in itertools.chain(state.answers.values(), state.judgements.values()))
