"""What a suite run does next. Pure: no Django, no Redis, no clock (tested on plain values).

A run has every contestant answer every prompt of its suite, then (with a model judge) has
pairs of those answers judged, each pair twice, once in each order (arena.battles.judging).
Which pairs: round robin, every pair of contestants on every prompt; knockout, a bracket per
prompt in which each pair's winner meets the next, so a prompt needs one pair fewer than it has
contestants; adaptive, one (pair, prompt) after another where the ranking is least resolved,
until every adjacent pair is separated or the call budget is spent (`_adaptive`); Swiss, rounds
pairing contestants of similar scores on prompts the seed draws (`swiss_schedule`). A run's
state is the generations it holds (`Slot`s: an answer, or one order of a judgement) and the
verdicts it recorded; `plan` says which generations to start now (at most
`in_flight` live at once), which verdicts to record, and how far the run is.

Order of work: answers contestant by contestant (one model busy at a time, its requests
batched), judging only once every answer has settled (the judge's model is not loaded while a
contestant's is still needed). A failed generation is tried again, up to `MAX_ATTEMPTS`
generations in all; after that its answer is missing for good: its pairs are not judged (in a
knockout the other side goes through), and the run goes on. Recomputing the plan from what the
database holds is what makes a run resumable: nothing that finished is ever started again.

A jury (`RunState.judges` > 1): every judged pair is read by each judge in both orders, and its
verdict is their majority (arena.battles.judging.jury_verdict). A judgement's last element is
then a *reading*: the order for the first judge ("left_first", as with one judge), the order
and the judge's place for the others ("left_first/2"): `reading`, `split_reading`.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from arena.battles.judging import LEFT, ORDERS, RIGHT, judge_verdict, jury_verdict

from . import adaptive

ROUND_ROBIN, KNOCKOUT, ADAPTIVE, SWISS = "round_robin", "knockout", "adaptive", "swiss"
FORMATS = (ROUND_ROBIN, KNOCKOUT, ADAPTIVE, SWISS)
DECIDED = (KNOCKOUT, ADAPTIVE, SWISS)  # formats whose pairs depend on the verdicts so far
MAX_ATTEMPTS = 3

MISSING, LIVE, DONE, FAILED = "missing", "live", "done", "failed"
JUDGE = -1  # upcoming(): the judge's model (catalogue ids are positive)

Answer = tuple[int, int]  # (prompt, contestant)
Pair = tuple[int, int, int]  # (prompt, left contestant, right contestant)
Judgement = tuple[int, int, int, str]  # a pair and the reading: the order shown, and whose (`reading`)


def reading(order: str, judge: int = 1) -> str:
    """The name of judge number `judge`'s (1, 2, 3) reading in `order`: the order alone for the first."""
    return order if judge == 1 else f"{order}/{judge}"


def split_reading(name: str) -> tuple[str, int]:
    """(order, judge number) of a reading's name (`reading`'s inverse)."""
    order, _, judge = name.partition("/")
    return order, int(judge) if judge else 1


def readings(judges: int) -> list[str]:
    """Every reading of a pair by `judges` judges, judge by judge, each in both orders."""
    return [reading(order, j) for j in range(1, judges + 1) for order in ORDERS]


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
    seed: int = 0  # a knockout's coin for tied pairs, a Swiss run's prompts, the adaptive prompt order
    budget: int | None = None  # adaptive: judge calls at most (None: `default_budget`)
    judges: int = 1  # a jury's size: each judge reads each pair in both orders

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
    calls: int = 0  # judge calls made so far (every attempt counts)
    stopped: str = ""  # adaptive, once it starts no new pair: SEPARATED, BUDGET_SPENT or EXHAUSTED

    @property
    def finished(self) -> bool:
        return self.done >= self.total and not (self.start_answers or self.start_judgements or self.record)


def plan(state: RunState, in_flight: int) -> Plan:
    """The next steps of a run: never more than `in_flight` generations live at once."""
    out = Plan()
    room = in_flight - _live(state)
    answer_keys = [(p, c) for c in state.contestants for p in state.prompts]
    out.total = len(answer_keys) + (_judging_total(state) if state.judged else 0)
    out.done = sum(state.answer(key).settled for key in answer_keys)
    out.calls = sum(slot.attempts for slot in state.judgements.values())
    for key in answer_keys:
        if room > 0 and state.answer(key).wants_start:
            out.start_answers.append(key)
            room -= 1
    if not state.judged or out.done < len(answer_keys):
        return out
    if state.format == ADAPTIVE:
        _adaptive(state, room, out)
        return out
    judged, forfeited = pairs(state)
    out.done += 2 * state.judges * forfeited
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
    """The pairs to judge now, both answers present (a knockout's later rounds, and a Swiss run's,
    appear as its earlier verdicts are recorded), and how many pairs were decided without a
    judgement because an answer is missing for good. (The adaptive format chooses its own:
    `_adaptive`.)"""
    if state.format == SWISS:
        rounds = swiss_schedule(state)
        return [key for r in rounds for key in r.judged], sum(len(r.forfeited) for r in rounds)
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


def _judging_total(state: RunState) -> int:
    """Judge calls a run makes if every answer arrives (its progress bar's share for judging):
    two a pair and judge; an adaptive run's budget until it stops (`_adaptive` then says what it spent)."""
    n, calls = len(state.contestants), 2 * state.judges
    if state.format == ADAPTIVE:
        return budget_of(state)
    if state.format == SWISS:
        return calls * swiss_pair_count(state)
    per_prompt = n - 1 if state.format == KNOCKOUT else n * (n - 1) // 2
    return calls * per_prompt * len(state.prompts)


def pair_outcome(state: RunState, pair: Pair) -> str:
    """A pair's verdict once every reading settled: each judge's order-consistent verdict (a judge
    with a reading failed for good abstains), then the jury's majority (a tie without one)."""
    verdicts = []
    for judge in range(1, state.judges + 1):
        slots = [state.judgement((*pair, reading(order, judge))) for order in ORDERS]
        verdicts.append(judge_verdict(*(slot.verdict if slot.state == DONE else "" for slot in slots)))
    return jury_verdict(verdicts)


def _judge_pair(state: RunState, pair: Pair) -> tuple[int, list[Judgement], str]:
    """For one pair: its settled judgements (progress), those to start, and its outcome once every
    reading is in ("" while waiting; with one judge, a tie when one order failed for good)."""
    keys = [(*pair, name) for name in readings(state.judges)]
    slots = [state.judgement(key) for key in keys]
    starts = [key for key, slot in zip(keys, slots, strict=True) if slot.wants_start]
    done = sum(slot.settled for slot in slots)
    outcome = pair_outcome(state, pair) if all(slot.settled for slot in slots) else ""
    return done, starts, outcome


def _answered(state: RunState, prompt: int, contestant: int) -> bool:
    return state.answer((prompt, contestant)).state == DONE


def _live(state: RunState) -> int:
    return sum(slot.state == LIVE for slot in itertools.chain(state.answers.values(), state.judgements.values()))


# --- Swiss ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SwissRound:
    """One round: its pairs of contestants (in seed order), who sat out, its prompts, the (pair,
    prompt)s to judge (both answers there) and those forfeited (an answer missing for good; the
    side that answered takes the point), and whether all its verdicts are in."""

    pairs: list[tuple[int, int]]
    bye: int | None
    prompts: list[int]
    judged: list[Pair]
    forfeited: list[Pair]
    complete: bool


def swiss_prompts(state: RunState) -> list[list[int]]:
    """Each round's prompts: the suite's prompts in an order the run's seed shuffles, cut into
    `swiss_rounds` slices of ceil(prompts / rounds) (a suite with fewer prompts than rounds
    starts over from its first): every prompt is used, each round on its own ones."""
    rounds = adaptive.swiss_rounds(len(state.contestants))
    shuffled = list(state.prompts)
    random.Random(f"{state.seed}:swiss").shuffle(shuffled)
    if not shuffled or not rounds:
        return [[] for _ in range(rounds)]
    per_round = -(-len(shuffled) // rounds)
    return [list(dict.fromkeys(shuffled[(r * per_round + i) % len(shuffled)] for i in range(per_round)))
            for r in range(rounds)]


def swiss_schedule(state: RunState) -> list[SwissRound]:
    """The rounds paired so far: each round is paired (adaptive.swiss_pairing) once every verdict
    of the one before is in, by the scores so far (a win 1, a tie or both bad 0.5, a forfeit 1 to
    the side that answered, a bye 0.5 a prompt of its round). A (pair, prompt) already met in an
    earlier round (a rematch no pairing could avoid, on prompts used again) is not judged twice."""
    scores = dict.fromkeys(state.contestants, 0.0)
    met: set[frozenset[int]] = set()
    byes: set[int] = set()
    used: set[Pair] = set()
    rounds: list[SwissRound] = []
    for prompts in swiss_prompts(state):
        paired, bye = adaptive.swiss_pairing(state.contestants, scores, met, byes)
        judged: list[Pair] = []
        forfeited: list[Pair] = []
        for a, b in paired:
            met.add(frozenset((a, b)))
            for prompt in prompts:
                key = (prompt, a, b)
                if key not in used:
                    used.add(key)
                    both = _answered(state, prompt, a) and _answered(state, prompt, b)
                    (judged if both else forfeited).append(key)
        complete = all(key in state.verdicts for key in judged)
        rounds.append(SwissRound(paired, bye, prompts, judged, forfeited, complete))
        if not complete:
            break
        for key in judged:
            _, a, b = key
            left_score = _score(state.verdicts[key])
            scores[a] += left_score
            scores[b] += 1 - left_score
        for prompt, a, b in forfeited:
            for side in (a, b):
                scores[side] += _answered(state, prompt, side)
        if bye is not None:
            byes.add(bye)
            scores[bye] += 0.5 * len(prompts)
    return rounds


def swiss_pair_count(state: RunState) -> int:
    """(pair, prompt)s a Swiss run decides: those of the rounds paired so far, and for each later
    round one a pair of contestants and a prompt of its own."""
    rounds = swiss_schedule(state)
    later = swiss_prompts(state)[len(rounds):]
    return (sum(len(r.judged) + len(r.forfeited) for r in rounds)
            + len(state.contestants) // 2 * sum(len(prompts) for prompts in later))


# --- adaptive ------------------------------------------------------------------------------------
SEPARATED, BUDGET_SPENT, EXHAUSTED = "separated", "budget", "exhausted"
STOP_REASONS = {SEPARATED: "every adjacent pair separated", BUDGET_SPENT: "budget spent",
                EXHAUSTED: "no prompt left for the pairs still unresolved"}


def default_budget(contestants: int, prompts: int, judges: int = 1) -> int:
    """Half of a round robin's judge calls (n·(n-1)/2 pairs a prompt, each read twice by each
    judge): n·(n-1)/2 calls a prompt and judge."""
    return max(2 * judges, contestants * (contestants - 1) // 2 * prompts * judges)


def budget_of(state: RunState) -> int:
    if state.budget is not None:
        return state.budget
    return default_budget(len(state.contestants), len(state.prompts), state.judges)


def _score(outcome: str) -> float:
    """The left side's share of a verdict: a win 1, a loss 0, a tie or both bad 0.5."""
    return 1.0 if outcome == LEFT else 0.0 if outcome == RIGHT else 0.5


def _adaptive(state: RunState, room: int, out: Plan) -> None:
    """The adaptive format's judging, once every answer settled.

    Calls are counted against the budget as they are committed: every generation made (retries
    included) and the not yet started order of a pair under way; a new pair is taken only when
    both its orders fit, a failed reading is tried again only while a call is left (else it is
    given up, and its pair is a tie, as after MAX_ATTEMPTS). The pairs under way finish first;
    with their verdicts, `adaptive.fit` rates the contestants, and while room is left (a pair
    for every two free places, the last pair's second order waiting for a place) the next pairs,
    while some adjacent pair (by rating) is not yet separated, are those whose verdicts are
    expected to remove the most errors from the ranking (`adaptive.pick`), among the
    pairs not under way with a prompt not yet judged for them and both answers. A pair's prompt
    is the first such in an order the run's seed shuffles for that pair. It stops (`Plan.stopped`) when no pair is under
    way and none can be taken: every adjacent pair separated, the budget spent, or no prompt left
    for the pairs still unresolved."""
    budget, names = budget_of(state), readings(state.judges)
    per_pair = len(names)
    open_pairs = sorted({key[:3] for key in state.judgements} - set(state.verdicts))
    committed = out.calls + sum(state.judgement((*pair, name)).state == MISSING
                                for pair in open_pairs for name in names)
    out.done += sum(slot.attempts - (slot.state == LIVE) for slot in state.judgements.values())
    decided = dict(state.verdicts)
    under_way: set[tuple[int, int]] = set()
    for pair in open_pairs:
        keys = [(*pair, name) for name in names]
        slots = [state.judgement(key) for key in keys]
        ready = True
        for key, slot in zip(keys, slots, strict=True):
            if slot.state == FAILED and slot.wants_start:
                if committed >= budget:
                    continue  # no call left for another try: given up
                committed += 1
            if slot.wants_start:
                ready = False
                if room > 0:
                    out.start_judgements.append(key)
                    room -= 1
            elif not slot.settled:
                ready = False  # live
        if ready:
            outcome = pair_outcome(state, pair)
            out.record.append((pair, outcome))
            decided[pair] = outcome
        else:
            under_way.add(pair[1:])
    fit = adaptive.fit(state.contestants, adaptive.tally((a, b, _score(o)) for (_, a, b), o in decided.items()))
    targets = [pair for pair in fit.adjacent() if not fit.separated(*pair)]
    used = {key[:3] for key in state.judgements} | set(state.verdicts)
    prompts = {}
    for a, b in itertools.combinations(state.contestants, 2):
        if (a, b) not in under_way and (prompt := _next_prompt(state, a, b, used)) is not None:
            prompts[(a, b)] = prompt
    affordable = max(0, min((room + per_pair - 1) // per_pair, (budget - committed) // per_pair))
    for left, right in adaptive.pick(fit, list(prompts), affordable) if targets else []:
        committed += per_pair
        under_way.add((left, right))
        for name in names:
            if room > 0:
                out.start_judgements.append((prompts[(left, right)], left, right, name))
                room -= 1
    if under_way:
        return  # the total stays the answers and the whole budget
    out.stopped = SEPARATED if not targets else BUDGET_SPENT if committed + per_pair > budget else EXHAUSTED
    out.total = out.done


def _next_prompt(state: RunState, left: int, right: int, used: set[Pair]) -> int | None:
    """The first prompt, in an order the run's seed shuffles for this pair, not yet judged for it
    and answered by both."""
    order = list(state.prompts)
    random.Random(f"{state.seed}:{left}:{right}").shuffle(order)
    return next((p for p in order if (p, left, right) not in used
                 and _answered(state, p, left) and _answered(state, p, right)), None)
