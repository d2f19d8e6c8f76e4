"""What to pick: a short decision summary of a set of ratings, in a small structure and in words.

The leaderboard, a suite run's report and a finished tournament end with it. It reads what the
tables already say (each entry's rating, 95% interval, rank range, verdicts, provisional mark,
measured speed and memory) and answers the team's question without claiming more than the data:

- the *contenders*: the entries that cannot be told apart from the best, i.e. the top entry and
  every entry whose rank range includes 1st or whose interval overlaps the top's;
- a single best only when it is the only contender, with its margin over the next entry;
- about how many more verdicts between the top two would separate them (uncertainty.separation,
  at their head-to-head rate, or the rate their ratings predict when they have not met);
- the fastest and the smallest among the contenders, with their figures;
- every caveat that applies: provisional contenders, an unreliable judge's verdicts counted,
  speeds not measured alike (some alone, some beside other generations), speeds or memory
  missing or estimated, tournament pairings.

Pure: plain values in, a frozen structure out; no Django, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from . import uncertainty

NOTHING_RATED = "No verdicts in this view yet: there is nothing to choose from."
ONE_RATED = "Only {label} is rated in this view: there is nothing to compare it with yet."
NO_SINGLE_BEST = ("{count} entries cannot be told apart from the best: {names}. Their 95% intervals overlap the "
                  "top one's or their rank ranges include 1st, so the data do not name a single best.")
CLEAR_BEST = ("{label} is the best in this view: its 95% interval ({lower:.0f}–{upper:.0f}) lies above every other "
              "entry's. It leads {next} by {points:.0f} rating points ({gap:.0f} between their intervals).")
SEPARATED = "{a} and {b} are already separated by their {given} verdicts between them."
MORE_TO_SEPARATE = ("About {more} more verdict{s} between {a} and {b} would separate the top two if {a} goes on "
                    "winning {rate}% of them ({given} so far).")
NOT_MET = ("{a} and {b} have not met: at the {rate}% their ratings predict, about {needed} verdict{s} between "
           "them would separate them.")
EVEN = "{a} and {b} win equally often: at that rate no number of verdicts would separate them."
FASTEST = "Fastest of them: {label}, {value:.1f} tokens/s (median decode)."
SMALLEST = "Smallest of them: {label}, {value:.0f} MB ({how})."
ITS_SPEED = "{label} decodes at {value:.1f} tokens/s (median)."
ITS_MEMORY = "{label} holds {value:.0f} MB ({how})."
MEASURED, ESTIMATED = "measured", "the catalogue's estimate"

PROVISIONAL = ("Provisional: {names} {verb} rated on fewer than {threshold} verdicts in this view; "
               "{pronoun} can still move a lot.")
UNRELIABLE_JUDGE = "Verdicts of a judge marked unreliable are counted here: {names}."
MIXED_SPEEDS = ("Speeds not measured alike: {names} {verb} measured only while other answers shared the worker"
                "{others}; compare speeds with care.")
OTHERS_ALONE = ", the others alone"
NO_SPEED = "No speed measured for {names}."
NO_SPEED_AT_ALL = "No speed measured for any of them."
ESTIMATED_MEMORY = "Memory of {names} is the catalogue's estimate, not a measurement."
TOURNAMENT_PAIRS = ("{count} of the {total} verdicts come from tournament matches, whose pairings are not random "
                    "(winners meet winners).")


@dataclass(frozen=True)
class Entry:
    """One rated entry, as the table shows it."""
    slug: str
    label: str
    rating: float
    lower: float  # its 95% interval
    upper: float
    rank_best: int  # its rank range (uncertainty.rank_ranges): 1 when it may be the best
    rank_worst: int
    verdicts: int
    provisional: bool = False
    tokens_per_s: float | None = None  # median decode speed; None: never measured
    speed_mixed: bool = False  # no answer of it ran alone: its speed was measured while others shared the worker
    memory_mb: float | None = None  # None: holds no memory here (an endpoint) or unknown
    memory_measured: bool = False  # a worker's resident figure, not the catalogue's estimate


@dataclass(frozen=True)
class Context:
    """What the view knows beyond the entries: the counts its caveats name."""
    verdicts: int = 0
    tournament_verdicts: int = 0
    unreliable_judges: tuple[str, ...] = ()  # labels of judges marked unreliable whose verdicts are counted
    provisional_threshold: int = 0


@dataclass(frozen=True)
class Figure:
    slug: str
    label: str
    value: float
    measured: bool = True


@dataclass(frozen=True)
class Summary:
    contenders: tuple[str, ...]  # slugs, best first: the entries that cannot be told apart from the best
    best: str | None  # the one clear best, or None where the data cannot name one
    margin: float | None  # the clear best's lead in rating points over the next entry
    pair: tuple[str, str] | None  # the top two, whose separation is estimated
    separation: uncertainty.Separation | None
    met: bool  # the top two have met (the rate is their own, not their ratings' prediction)
    fastest: Figure | None
    smallest: Figure | None
    caveats: tuple[str, ...]
    sentences: tuple[str, ...] = field(default=())

    def as_json(self) -> dict:
        """The summary for the JSON API: the same words, and the figures behind them."""
        sep = self.separation
        return {
            "contenders": list(self.contenders), "best": self.best, "margin": self.margin,
            "top_two": list(self.pair) if self.pair else None,
            "separation": None if sep is None else {
                "rate": sep.rate, "given": sep.given, "needed": sep.needed, "more": sep.more,
                "separated": sep.separated, "met": self.met},
            "fastest": _figure_json(self.fastest), "smallest": _figure_json(self.smallest),
            "caveats": list(self.caveats), "sentences": list(self.sentences),
        }


def _figure_json(figure: Figure | None) -> dict | None:
    return None if figure is None else {"model": figure.slug, "label": figure.label, "value": figure.value,
                                        "measured": figure.measured}


def contenders(entries: Sequence[Entry]) -> list[Entry]:
    """The entries that cannot be told apart from the best, best first: the top-rated entry, and
    every other whose rank range includes 1st or whose 95% interval reaches the top's."""
    ranked = _ranked(entries)
    if not ranked:
        return []
    top = ranked[0]
    return [top] + [e for e in ranked[1:] if e.rank_best <= 1 or e.upper >= top.lower]


def summarise(entries: Sequence[Entry], cells: Mapping[tuple[str, str], tuple[float, int]] | None = None,
              context: Context = Context()) -> Summary:
    """The decision summary of `entries` (any order), with the head-to-head `cells`
    (ratings.win_matrix: (a, b) -> (a's win rate over b, verdicts)) for the separation estimate."""
    ranked = _ranked(entries)
    if not ranked:
        return Summary((), None, None, None, None, False, None, None, (), (NOTHING_RATED,))
    if len(ranked) == 1:
        only = ranked[0]
        caveats = tuple(_caveats([only], context))
        figures = _own_figures(only)
        return Summary((only.slug,), None, None, None, None, False, _fastest([only]), _smallest([only]), caveats,
                       (ONE_RATED.format(label=only.label), *figures, *caveats))
    top, second = ranked[0], ranked[1]
    chosen = contenders(ranked)
    estimate = uncertainty.pair_estimate(top.slug, second.slug, {e.slug: e.rating for e in ranked},
                                          dict(cells or {}))
    separation = estimate.separation if estimate else None
    met = bool(estimate and estimate.met)
    sentences: list[str] = []
    if len(chosen) == 1:
        best, margin = top.slug, top.rating - second.rating
        sentences.append(CLEAR_BEST.format(label=top.label, lower=top.lower, upper=top.upper, next=second.label,
                                           points=margin, gap=top.lower - second.upper))
        sentences.extend(_own_figures(top))
    else:
        best, margin = None, None
        sentences.append(NO_SINGLE_BEST.format(count=len(chosen), names=names([e.label for e in chosen])))
        if separation is not None:
            sentences.append(_separation_words(top.label, second.label, separation, met))
        fastest, smallest = _fastest(chosen), _smallest(chosen)
        if fastest is not None:
            sentences.append(FASTEST.format(label=fastest.label, value=fastest.value))
        if smallest is not None:
            sentences.append(SMALLEST.format(label=smallest.label, value=smallest.value,
                                             how=MEASURED if smallest.measured else ESTIMATED))
    caveats = tuple(_caveats(chosen, context))
    return Summary(tuple(e.slug for e in chosen), best, margin, (top.slug, second.slug), separation, met,
                   _fastest(chosen), _smallest(chosen), caveats, (*sentences, *caveats))


def _ranked(entries: Sequence[Entry]) -> list[Entry]:
    return sorted(entries, key=lambda e: (-e.rating, e.slug))


def names(labels: Sequence[str]) -> str:
    """"A", "A and B", "A, B and C"."""
    labels = list(labels)
    return labels[0] if len(labels) == 1 else ", ".join(labels[:-1]) + " and " + labels[-1]


def _plural(items: Sequence) -> dict[str, str]:
    one = len(items) == 1
    return {"verb": "is" if one else "are", "pronoun": "its rating" if one else "their ratings"}


def _separation_words(a: str, b: str, sep: uncertainty.Separation, met: bool) -> str:
    if sep.needed is None:
        return EVEN.format(a=a, b=b)
    if met and sep.separated:
        return SEPARATED.format(a=a, b=b, given=sep.given)
    if met:
        more = sep.more or 0
        return MORE_TO_SEPARATE.format(more=more, s="" if more == 1 else "s", a=a, b=b, rate=round(100 * sep.rate),
                                       given=sep.given)
    return NOT_MET.format(a=a, b=b, rate=round(100 * sep.rate), needed=sep.needed, s="" if sep.needed == 1 else "s")


def _fastest(chosen: Sequence[Entry]) -> Figure | None:
    timed = [e for e in chosen if e.tokens_per_s is not None]
    if not timed:
        return None
    e = max(timed, key=lambda e: (e.tokens_per_s, e.slug))
    return Figure(e.slug, e.label, float(e.tokens_per_s or 0.0), not e.speed_mixed)


def _smallest(chosen: Sequence[Entry]) -> Figure | None:
    held = [e for e in chosen if e.memory_mb is not None]
    if not held:
        return None
    e = min(held, key=lambda e: (e.memory_mb, e.slug))
    return Figure(e.slug, e.label, float(e.memory_mb or 0.0), e.memory_measured)


def _own_figures(e: Entry) -> list[str]:
    """A single entry's speed and memory, where known."""
    words = []
    if e.tokens_per_s is not None:
        words.append(ITS_SPEED.format(label=e.label, value=e.tokens_per_s))
    if e.memory_mb is not None:
        words.append(ITS_MEMORY.format(label=e.label, value=e.memory_mb,
                                       how=MEASURED if e.memory_measured else ESTIMATED))
    return words


def _which(labels: Sequence[str], chosen: Sequence[Entry]) -> str:
    """The entries a caveat is about: "all 8 of them" when it is every contender (a list would
    only repeat the one above), else their names."""
    return f"all {len(chosen)} of them" if len(chosen) > 2 and len(labels) == len(chosen) else names(labels)


def _caveats(chosen: Sequence[Entry], context: Context) -> list[str]:
    """Every caveat that applies to the contenders and the verdicts behind them."""
    caveats = []
    provisional = [e.label for e in chosen if e.provisional]
    if provisional:
        caveats.append(PROVISIONAL.format(names=_which(provisional, chosen), threshold=context.provisional_threshold,
                                          **_plural(provisional)))
    if context.unreliable_judges:
        caveats.append(UNRELIABLE_JUDGE.format(names=names(context.unreliable_judges)))
    timed = [e for e in chosen if e.tokens_per_s is not None]
    mixed = [e.label for e in timed if e.speed_mixed]
    if mixed:
        caveats.append(MIXED_SPEEDS.format(names=names(mixed), verb=_plural(mixed)["verb"],
                                           others=OTHERS_ALONE if len(mixed) < len(timed) else ""))
    unmeasured = [e.label for e in chosen if e.tokens_per_s is None]
    if unmeasured and len(chosen) > 1:
        caveats.append(NO_SPEED_AT_ALL if len(unmeasured) == len(chosen) else NO_SPEED.format(names=names(unmeasured)))
    estimated = [e.label for e in chosen if e.memory_mb is not None and not e.memory_measured]
    if estimated:
        caveats.append(ESTIMATED_MEMORY.format(names=_which(estimated, chosen)))
    if context.tournament_verdicts:
        caveats.append(TOURNAMENT_PAIRS.format(count=context.tournament_verdicts, total=context.verdicts))
    return caveats
