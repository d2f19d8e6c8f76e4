"""The history's export: the user's battles or generations as CSV or JSON, streamed row by row
(the records, the CSV cells and the download are arena.generations.export's and
arena.battles.export's, which other exports share).

Unrevealed blind battles are not exported at all (see queries.battles): their rows would
name the contestants before the tournament's reveal.

Each row also says whose it is (`owner`, `team`: a "my team's" export holds every member's), and
a battle's the category of its prompt (arena/categories, as the leaderboard places it) and, for a
suite pair judged through a rater link (arena/raters), that link's name."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator

from django.core.serializers.json import DjangoJSONEncoder
from django.http import StreamingHttpResponse
from django.utils import timezone

from arena.battles.export import battle_record
from arena.generations.export import Absolute, csv_lines, download, generation_record
from arena.leaderboard.by_category import battle_category_names
from arena.suite_runs.models import RaterVerdict
from arena.teams.membership import whose

FORMATS = ("csv", "json")
DATASETS = ("battles", "generations")
CHUNK = 200  # rows fetched per query (and per prefetch)

_SIDE = ["model", "model_name", "system_prompt", "params", "status", "text", "finish_reason", "failure_reason",
         "prompt_tokens", "generated_tokens", "time_to_first_token_s", "tokens_per_s", "load_wait_s", "queue_wait_s",
         "cached", "cached_from", "generation_id"]

COLUMNS = {
    "battles": ["id", "created_at", "owner", "team", "mode", "blind", "tag", "category", "prompt", "history",
                "left_model", "right_model", "outcome", "winner_model", "judge", "jury", "orders_agree", "tie_reason",
                "judgements", "voted_at", "reasons", "comment", "rater_name",
                *[f"{side}_{k}" for k in _SIDE[2:] for side in ("left", "right")],
                "left_model_name", "right_model_name", "self_identified", "parent_id", "tournament_id", "permalink"],
    "generations": ["id", "created_at", "owner", "team", "origin", "model", "model_name", "tag", "prompt",
                    "system_prompt", "history", "params", "status", "text", "finish_reason", "failure_reason",
                    "prompt_tokens", "generated_tokens", "time_to_first_token_s", "tokens_per_s", "load_wait_s",
                    "queue_wait_s", "cached", "cached_from", "finished_at", "permalink"],
}


def records(dataset: str, queryset, absolute: Absolute) -> Iterator[dict]:
    if dataset == "generations":
        for gen in queryset.iterator(chunk_size=CHUNK):
            yield {**generation_record(gen, absolute), **whose(gen)}
        return
    rows = queryset.prefetch_related("tournament_matches").iterator(chunk_size=CHUNK)
    while chunk := list(itertools.islice(rows, CHUNK)):
        categories = battle_category_names([str(b.id) for b in chunk], {str(b.id): b.prompt for b in chunk})
        for battle in chunk:
            yield {**battle_record(battle, absolute), **whose(battle), "category": categories.get(str(battle.id)),
                   "rater_name": RaterVerdict.name_on(battle)}


# --- formats -----------------------------------------------------------------------------
def json_chunks(dataset: str, filters: dict, rows: Iterable[dict]) -> Iterator[str]:
    """{"dataset", "exported_at", "filters", "rows": [...]}, one row per chunk."""
    head = {"dataset": dataset, "exported_at": timezone.now().isoformat(), "filters": filters}
    yield json.dumps(head, cls=DjangoJSONEncoder)[:-1] + ', "rows": ['
    for i, record in enumerate(rows):
        yield ("," if i else "") + "\n" + json.dumps(record, cls=DjangoJSONEncoder, ensure_ascii=False)
    yield "\n]}\n"


# --- the response --------------------------------------------------------------------------
def filename(dataset: str, fmt: str) -> str:
    return f"llm-arena-{dataset}-{timezone.localdate().isoformat()}.{fmt}"


def response(request, dataset: str, fmt: str, queryset, filters: dict) -> StreamingHttpResponse:
    """The export as a download, streamed: rows are read CHUNK at a time and written as they come."""
    rows = records(dataset, queryset, request.build_absolute_uri)
    chunks = csv_lines(COLUMNS[dataset], rows) if fmt == "csv" else json_chunks(dataset, filters, rows)
    return download(request, chunks, fmt, filename(dataset, fmt))
