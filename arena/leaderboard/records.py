"""The battle records the leaderboard is fitted on, read from the battles app."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db.models import Count, F, Q
from django.utils import timezone

from arena.access import visible_to
from arena.battles.models import Battle

from . import cache, trust
from .charts import Name, distinct

SEP = " · "
FULL_VARIANT = "full precision"

SCORES = {Battle.Outcome.LEFT: 1.0, Battle.Outcome.RIGHT: 0.0, Battle.Outcome.TIE: 0.5, Battle.Outcome.BOTH_BAD: 0.5}
MODES = {"all": "All verdicts", "anonymous": "Anonymous battles", "named": "Named comparisons",
         "blind": "Blind (tournament matches)"}
PERIODS = {"all": None, "1": 1, "7": 7, "30": 30}
# Where a verdict comes from: people in each mode, or a model judge. The leaderboard opens on
# every kind together (judges marked unreliable left out), and names and counts each.
KINDS = {"comparison": "comparisons", "tournament": "tournaments", "anonymous": "anonymous battles",
         "suite": "suite runs (people)", "judge": "model judges"}
PEOPLE = frozenset({"comparison", "tournament", "anonymous", "suite"})
EVERY_KIND = frozenset(KINDS)
# The older "whose verdicts" choice, still read from links and callers: each names a set of kinds.
SOURCES = {"human": "People's verdicts", "judge": "Model judges' verdicts", "both": "People's and judges' verdicts"}
SOURCE_KINDS = {"human": PEOPLE, "judge": frozenset({"judge"}), "both": EVERY_KIND}
# A blind verdict where an answer named a contestant ("I am Gemma"): the judge may not have been
# blind. A named comparison showed the names anyway, so its flag changes nothing.
FLAGGED = Q(blind=True, self_identified=True)


@dataclass(frozen=True)
class Whose:
    """Whose work's verdicts the board counts: everyone's (`all`), one user's (`mine`: the battles
    they own, a judge's and people's verdicts on their runs included) or one team's (`team`: the
    battles made in it, by every member)."""

    scope: str = "all"
    id: int | None = None

    def key(self) -> str:
        return self.scope if self.id is None else f"{self.scope}-{self.id}"

    def narrow(self, battles):
        if self.scope == "mine":
            return battles.filter(owner_id=self.id)
        if self.scope == "team":
            return battles.filter(team_id=self.id)
        return battles


EVERYONE = Whose()


def counted_battles(whose: Whose = EVERYONE):
    """The battles whose verdict counts. A blind battle counts once its tournament has revealed
    it: before, its effect on the table would tell its judge which model they picked."""
    return whose.narrow(Battle.objects.exclude(outcome="").exclude(blind=True, revealed=False))


def unreliable_judges() -> frozenset[str]:
    """The slugs of the model judges their stored readings mark unreliable (arena.leaderboard.trust:
    reading positions, disagreeing with itself, saying ties), whose verdicts count only when asked
    for. Read once per verdict generation: every judged verdict bumps it (cache.py)."""
    return frozenset(cache.cached("unreliable-judges", (), trust.unreliable_judges))


def leave_out_unreliable(battles):
    """The one place that decides which judges' verdicts count unasked: `battles` less every verdict
    an unreliable judge took part in (a jury's too: its majority counted that judge's reading)."""
    left_out = unreliable_judges()
    return battles.exclude(id__in=trust.unreliable_battles(set(left_out))) if left_out else battles


def _kinds(source: str | frozenset[str]) -> frozenset[str]:
    """The kinds of verdict a source names: a set of KINDS, or one of the older SOURCES."""
    return SOURCE_KINDS.get(source, PEOPLE) if isinstance(source, str) else frozenset(source) & EVERY_KIND


def _of_kinds(battles, kinds: frozenset[str], unreliable: bool):
    """`battles` narrowed to the kinds given: people's verdicts by mode, model judges' (less the
    unreliable judges' unless `unreliable`)."""
    people = Q(judge__isnull=True, mode__in=sorted(kinds & PEOPLE))
    battles = battles.filter(people | Q(judge__isnull=False)) if "judge" in kinds else battles.filter(people)
    return battles if unreliable or "judge" not in kinds else leave_out_unreliable(battles)


def tags(user) -> list[str]:
    """The prompt tags of the counted battles `user` may open (their own, their teams'), for the
    filter: another team's tags are its own words, not to be listed to everyone. Cached per user
    and teams until a verdict lands."""
    teams = tuple(sorted(user.team_memberships.values_list("team_id", flat=True))) if user.is_authenticated else ()
    return cache.cached("tags", (user.pk, *teams), lambda: sorted(
        counted_battles().filter(visible_to(user)).exclude(tag="").order_by().values_list("tag", flat=True).distinct()))


def verdicts(mode: str = "all", days: int | None = None, tag: str = "", source: str | frozenset[str] = "human",
             unreliable: bool = False, whose: Whose = EVERYONE):
    """The counted battles of one filter: a mode, the last `days` days, a prompt tag, which kinds
    of verdict (a set of KINDS, or one of the older SOURCES: people's, model judges', both), and
    whether the verdicts of judges marked unreliable count."""
    # A model against itself (two system prompts) says nothing of its rating.
    battles = _of_kinds(counted_battles(whose).exclude(left__model_id=F("right__model_id")), _kinds(source),
                        unreliable)
    if mode == "named":
        battles = battles.filter(blind=False)
    elif mode == "blind":  # tournament matches (and suite runs' blind pairs): not the anonymous battles
        battles = battles.filter(blind=True).exclude(mode=Battle.Mode.ANONYMOUS)
    elif mode == "anonymous":
        battles = battles.filter(mode=Battle.Mode.ANONYMOUS)
    if tag:
        battles = battles.filter(tag=tag)
    if days:
        battles = battles.filter(voted_at__gte=timezone.now() - timedelta(days=days))
    return battles


def battle_records(mode: str = "all", days: int | None = None, tag: str = "", flagged: bool = False,
                   source: str | frozenset[str] = "human", unreliable: bool = False, whose: Whose = EVERYONE):
    """Every verdict (ties and "both bad" count as ties), as (left slug, right slug, score of left,
    from a tournament), optionally only those of one prompt tag; flagged blind verdicts only if asked."""
    rows = _counted(mode, days, tag, flagged, source, unreliable, whose).values_list(
        "left__model__slug", "right__model__slug", "outcome", "mode")
    return [(left, right, SCORES[outcome], mode == Battle.Mode.TOURNAMENT) for left, right, outcome, mode in rows]


def style_records(mode: str = "all", days: int | None = None, tag: str = "", flagged: bool = False,
                  source: str | frozenset[str] = "human", unreliable: bool = False, whose: Whose = EVERYONE):
    """The same verdicts as battle_records, as (left slug, right slug, score of left, left answer,
    right answer), each answer (text, generated tokens): what style control reads."""
    rows = _counted(mode, days, tag, flagged, source, unreliable, whose).values_list(
        "left__model__slug", "right__model__slug", "outcome", "left__text", "left__generated_tokens",
        "right__text", "right__generated_tokens")
    return [(left, right, SCORES[outcome], (lt, ln or 0), (rt, rn or 0))
            for left, right, outcome, lt, ln, rt, rn in rows]


def reason_records(mode: str = "all", days: int | None = None, tag: str = "", flagged: bool = False,
                   source: str | frozenset[str] = "human", whose: Whose = EVERYONE):
    """People's verdicts of the filter that carry reason tags, as (left slug, right slug, outcome,
    reason slugs): what the leaderboard's "why it won, why it lost" counts (a model judge gives none)."""
    people = _kinds(source) & PEOPLE
    rows = _counted(mode, days, tag, flagged, people, whose=whose).filter(judge__isnull=True).values_list(
        "left__model__slug", "right__model__slug", "outcome", "reasons")
    return [(left, right, outcome, list(reasons)) for left, right, outcome, reasons in rows if reasons]


def _counted(mode, days, tag, flagged, source, unreliable=False, whose: Whose = EVERYONE):
    battles = verdicts(mode, days, tag, source, unreliable, whose)
    return battles if flagged else battles.exclude(FLAGGED)


def flagged_count(mode: str = "all", days: int | None = None, tag: str = "", source: str | frozenset[str] = "human",
                  unreliable: bool = False, whose: Whose = EVERYONE) -> int:
    """How many verdicts of the filter are flagged: left out by default, shown on request."""
    return verdicts(mode, days, tag, source, unreliable, whose).filter(FLAGGED).count()


def kind_counts(mode: str = "all", days: int | None = None, tag: str = "", flagged: bool = False,
                unreliable: bool = False, whose: Whose = EVERYONE) -> dict[str, int]:
    """How many verdicts of each kind (KINDS) the filter has, whichever kinds are shown: what the
    leaderboard's source line names and counts."""
    battles = _counted(mode, days, tag, flagged, EVERY_KIND, unreliable, whose).order_by()
    counts = dict.fromkeys(KINDS, 0)
    for row in battles.filter(judge__isnull=True).values("mode").annotate(n=Count("pk")):
        if row["mode"] in counts:
            counts[row["mode"]] = row["n"]
    counts["judge"] = battles.filter(judge__isnull=False).count()
    return counts


def unreliable_count(mode: str = "all", days: int | None = None, tag: str = "", flagged: bool = False,
                     whose: Whose = EVERYONE) -> int:
    """How many verdicts of judges marked unreliable the filter leaves out unless asked."""
    judged = frozenset({"judge"})
    return (_counted(mode, days, tag, flagged, judged, True, whose).count()
            - _counted(mode, days, tag, flagged, judged, False, whose).count())


def agreement_records(mode: str = "all", days: int | None = None, tag: str = "", flagged: bool = False,
                      whose: Whose = EVERYONE):
    """People's and judges' verdicts of the filter, oldest first, as (left generation, right
    generation, outcome, judged): what the judge-human agreement compares."""
    rows = (_counted(mode, days, tag, flagged, "both", True, whose).order_by("voted_at", "created_at")
            .values_list("left_id", "right_id", "outcome", "judge_id"))
    return [(left, right, outcome, judge is not None) for left, right, outcome, judge in rows]


def names() -> dict[str, Name]:
    """Entry slug -> its Name: the label charts and tables show (ModelEntry.label; the name where an
    entry has none yet), no two alike, and the full catalogue name. Verdicts are kept by slug, so
    an entry's renamed or relabelled verdicts show its current label."""
    from arena.catalogue.models import ModelEntry

    rows = list(ModelEntry.objects.order_by("created_at", "pk").values_list("slug", "label", "name"))
    shown = distinct([Name(label or name, name) for _slug, label, name in rows], [slug for slug, *_x in rows])
    return {slug: name for (slug, *_x), name in zip(rows, shown, strict=True)}


@dataclass(frozen=True)
class Family:
    """The base model an entry serves (`key`), its name, and how this entry serves it."""
    key: str
    name: str
    variant: str


def families() -> dict[str, Family]:
    """Entry slug -> its Family. Entries that load the same weights (`source`: the same GGUF, repo
    or folder, served by transformers at full precision, as AWQ, speculatively or by llama.cpp)
    or name the same remote model are one family, named after its first entry's model part
    (labels.head); an entry with neither is a family of its own."""
    from arena.catalogue import labels
    from arena.catalogue.models import ModelEntry

    rows = (ModelEntry.objects.order_by("created_at", "pk")
            .values_list("slug", "name", "source", "remote_model", "engine", "kind", "precision", "gguf_file",
                         "draft__name"))
    named: dict[str, str] = {}
    out = {}
    for slug, name, source, remote, engine, kind, precision, gguf, draft in rows:
        key = f"source:{source}" if source else f"remote:{remote}" if remote else f"entry:{slug}"
        family = named.setdefault(key, labels.head(name))
        served = labels.serving(engine, kind, precision, gguf, labels.head(draft) if draft else "")
        out[slug] = Family(key, family, SEP.join(served) or FULL_VARIANT)
    return out


def prompt_records(mode: str = "all", days: int | None = None, tag: str = "", flagged: bool = False,
                   source: str | frozenset[str] = "human", unreliable: bool = False, limit: int | None = None,
                   whose: Whose = EVERYONE):
    """The same verdicts as battle_records, newest first, as (battle id, left slug, right slug,
    score of left, prompt): what the per-category table and "prompts like this one" read."""
    rows = (_counted(mode, days, tag, flagged, source, unreliable, whose).order_by("-voted_at", "-created_at")
            .values_list("id", "left__model__slug", "right__model__slug", "outcome", "left__prompt"))
    if limit is not None:
        rows = rows[:limit]
    return [(str(bid), left, right, SCORES[outcome], prompt) for bid, left, right, outcome, prompt in rows]
