"""A suite run's answers and verdicts as CSV or JSON (arena.generations.export's conventions: the
same side fields, formula cells escaped in CSV, a private streamed download), and its verdicts
between two contestants as the JSON file LLM Comparator (github.com/PAIR-code/llm-comparator)
loads.

CSV: one row per answer (prompt x contestant), with its checks' results (`checks_passed`,
`checks_score`, `checks_failed` and every result as JSON in `checks`; arena.suites.checks) and
what it cost at its entry's price (`cost_usd`, empty without a price: arena.catalogue.pricing).
JSON: {"dataset", "exported_at", "filters", "run", "answers", "verdicts"}, each answer with the
same fields, each verdict a history battle record plus the prompt's place and both raw
judgements, and whether the judge's two orders agreed (a pair on which they disagree is a tie:
`tie_reason`); the run holds how often they agreed (`judge_agreement`) and the pass rates per
contestant, check and tag with their intervals and each contestant's cost (`check_rates`, as in
the API). Verdicts are the model judge's, the owner's revealed blind ones and the rater links'
revealed ones, each of these with its link's name (`rater_name`); an unrevealed one would name the
contestants before the reveal, as in the history export.

LLM Comparator compares two models by one rater (the run's judge, or for a run people judge,
the owner's revealed verdicts: arena.suite_runs.report.rated_verdicts). It reads one JSON object
{"metadata", "models" (two names), "examples": [{"input_text", "tags", "output_text_a",
"output_text_b", "score", "individual_rater_scores", "custom_fields"}]}, score from +1 (A
better) to -1 (B better), 0 a tie. The user picks the pair (?pair=<a>,<b>; the run page's form
lists them, the first two contestants being the default) or every pair (?pair=all: one file per
pair in a .zip). The run's JSON names its whole jury (`judges`), each verdict its own (`jury`).
The issue asked for JSONL; the tool reads no JSONL, so the file is that one object,
written on one line (a one-line JSONL file too)."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from itertools import combinations
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Q
from django.utils import timezone

from arena.battles.export import battle_record
from arena.battles.models import Battle
from arena.generations.export import csv_lines, side_record

from .models import RaterVerdict, SuiteAnswer, SuiteRun
from .report import answer_cost, check_rates, check_rates_json, judge_agreement, judged_pairs, rated_verdicts

ANSWER_COLUMNS = ["run_id", "prompt_position", "prompt", "reference", "contestant", "attempts", "model",
                  "model_name", "system_prompt", "params", "status", "text", "output_valid", "finish_reason",
                  "failure_reason", "prompt_tokens", "generated_tokens", "time_to_first_token_s",
                  "tokens_per_s", "load_wait_s", "queue_wait_s", "cached", "cached_from", "checks_passed",
                  "checks_score", "checks_failed", "checks", "cost_usd", "generation_id"]
SCORE = {"left": 1.0, "right": -1.0, "tie": 0.0, "both_bad": 0.0}  # the left side's, in LLM Comparator's terms
LABEL = {1.0: "A is better", -1.0: "B is better", 0.0: "Same"}


def filename(run: SuiteRun, what: str, fmt: str) -> str:
    return f"llm-arena-suite-run-{str(run.id)[:8]}-{what}-{timezone.localdate().isoformat()}.{fmt}"


def answer_record(answer: SuiteAnswer) -> dict:
    gen = answer.generation
    return {"run_id": str(answer.run_id), "prompt_position": answer.prompt.position, "prompt": answer.prompt.prompt,
            "reference": answer.prompt.reference, "contestant": answer.contestant.slug, "attempts": answer.attempts,
            **side_record(gen), "output_valid": gen.output_valid, **checks_record(answer),
            "cost_usd": answer_cost(gen, answer.contestant)}


def checks_record(answer: SuiteAnswer) -> dict:
    """The answer's checks: whether all passed (None: not checked, or no check), the weighted
    score, the failing checks' names, and every result (name, passed, score, weight, expected, got)."""
    return {"checks_passed": answer.passed, "checks_score": answer.score,
            "checks_failed": "; ".join(r["name"] for r in answer.checks if not r["passed"]),
            "checks": answer.checks}


def answers(run: SuiteRun) -> Iterator[dict]:
    place = {m.id: i for i, m in enumerate(run.contestants)}
    rows = SuiteAnswer.objects.filter(run=run).select_related("prompt", "contestant", "generation__model")
    for answer in sorted(rows, key=lambda a: (a.prompt.position, place[a.contestant_id])):
        yield answer_record(answer)


def verdicts(run: SuiteRun):
    """The judge's verdicts, the owner's revealed blind ones and the rater links' revealed ones
    (a link's are revealed once it has ended: arena.raters.actions), oldest first."""
    mine = Q(judge__isnull=True, owner=run.owner, revealed=True)
    people = run.people_verdicts(run.owner).filter(mine)
    raters = Battle.objects.filter(rater_verdict__run=run, revealed=True)
    return (run.verdicts() | people | raters).select_related(
        "left__model", "right__model", "judge", "rater_verdict").prefetch_related(
        "tournament_matches").order_by("created_at")


def verdict_record(battle: Battle, positions: dict, absolute) -> dict:
    """A verdict as the history export writes one (with a model judge's two readings, whether
    they agreed and, if not, why the pair is a tie), the prompt's place, and the rater link's
    name for a rater's verdict (None: the judge's or the owner's)."""
    return {**battle_record(battle, absolute), "prompt_position": positions.get(battle.left_id),
            "rater_name": RaterVerdict.name_on(battle)}


def csv_chunks(run: SuiteRun) -> Iterator[str]:
    return csv_lines(ANSWER_COLUMNS, answers(run))


def json_document(run: SuiteRun, absolute) -> Iterator[str]:
    positions = dict(SuiteAnswer.objects.filter(run=run).values_list("generation_id", "prompt__position"))
    document = {
        "dataset": "suite_run", "exported_at": timezone.now().isoformat(), "filters": {"run": str(run.id)},
        "run": {"id": str(run.id), "suite": run.suite.name, "suite_id": str(run.suite_id), "tag": run.suite.tag,
                "format": run.format, "judge": run.judge.slug if run.judge is not None else None,
                "judges": [m.slug for m in run.judges],  # the whole jury, first seat first (empty: people judge)
                "judge_template": run.judge_template, "params": run.params, "state": run.state,
                "done": run.done, "total": run.total, "contestants": [m.slug for m in run.contestants],
                "judge_agreement": judge_agreement(list(judged_pairs(run))),
                # the pass rates per contestant (with its answers' cost), check and tag, as the API gives them
                "check_rates": check_rates_json(check_rates(run)),
                "permalink": absolute(run.get_absolute_url())},
        "answers": list(answers(run)),
        "verdicts": [verdict_record(b, positions, absolute) for b in verdicts(run)],
    }
    yield json.dumps(document, cls=DjangoJSONEncoder, ensure_ascii=False) + "\n"


# --- LLM Comparator ----------------------------------------------------------------------------
EVERY_PAIR = "all"  # ?pair=all: one file per pair of contestants, in a .zip


def comparator_pairs(run: SuiteRun) -> list[tuple[Any, Any]]:
    """Every pair of the run's contestants, in their order (the first pair is the default export)."""
    return list(combinations(run.contestants, 2))


def pair_value(a, b) -> str:
    """A pair as the export's ?pair= names it: "<a slug>,<b slug>" (slugs hold no comma)."""
    return f"{a.slug},{b.slug}"


def comparator_models(run: SuiteRun, a_slug: str | None, b_slug: str | None) -> tuple[Any, Any] | None:
    """The two contestants compared (default: the first two), or None if they are not two of the run's."""
    by_slug = {m.slug: m for m in run.contestants}
    order = list(by_slug)
    if len(order) < 2:
        return None
    a, b = by_slug.get(a_slug or order[0]), by_slug.get(b_slug or order[1])
    return (a, b) if a and b and a != b else None


def comparator_choice(run: SuiteRun, params) -> list[tuple[Any, Any]] | None:
    """The pairs a request asks for: ?pair=all (every pair), ?pair=<a>,<b> or ?a=&b= (one pair),
    or nothing (the first two contestants, as the form says). None: not two of the run's."""
    pair = params.get("pair") or ""
    if pair == EVERY_PAIR:
        return comparator_pairs(run) or None
    a_slug, _, b_slug = pair.partition(",") if pair else (params.get("a"), "", params.get("b"))
    models = comparator_models(run, a_slug or None, b_slug or None)
    return [models] if models else None


def comparator_zip(run: SuiteRun, pairs, absolute) -> bytes:
    """Every pair's LLM Comparator file in one .zip (the tool compares two models per file)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for a, b in pairs:
            document = "".join(comparator_document(run, a, b, absolute))
            archive.writestr(f"llm-comparator-{a.slug}-vs-{b.slug}.json", document)
    return out.getvalue()


def comparator_document(run: SuiteRun, a, b, absolute) -> Iterator[str]:
    rated = rated_verdicts(run, run.owner).select_related("left__model", "right__model").order_by("created_at")
    examples = [_example(battle, a) for battle in rated
                if {battle.left.model_id, battle.right.model_id} == {a.id, b.id}]
    document = {"metadata": {"source_path": absolute(run.get_absolute_url()), "custom_fields_schema": []},
                "models": [{"name": a.name}, {"name": b.name}], "examples": examples}
    yield json.dumps(document, ensure_ascii=False) + "\n"


def _example(battle: Battle, a) -> dict:
    """One verdict as an example, A being model `a` whichever side of the pair it took."""
    sign = 1.0 if battle.left.model_id == a.id else -1.0
    texts = (battle.left.text, battle.right.text)
    text_a, text_b = texts if sign > 0 else texts[::-1]
    readings = battle.judgements or [{"order": "person", "raw": "", "verdict": battle.outcome}]
    return {"input_text": battle.prompt, "tags": [battle.tag] if battle.tag else [],
            "output_text_a": text_a, "output_text_b": text_b, "score": sign * SCORE[battle.outcome] + 0.0,
            "individual_rater_scores": [_rating(r, sign) for r in readings],
            "custom_fields": {}}


def _rating(reading: dict, sign: float) -> dict:
    """One reading in A/B terms; is_flipped: B's answer was shown first (`sign` < 0: A is the pair's right side)."""
    score = sign * SCORE.get(str(reading.get("verdict")), 0.0) + 0.0  # + 0.0: no -0.0
    b_first = (reading.get("order") == "right_first") == (sign > 0)
    return {"score": score, "rating_label": LABEL[score], "is_flipped": b_first, "rationale": reading.get("raw", ""),
            "custom_fields": {}}
