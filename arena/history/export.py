"""The history's export: the user's battles or generations as CSV or JSON, streamed row by row
(the records, the CSV cells and the download are arena.generations.export's and
arena.battles.export's, which other exports share).

Unrevealed blind battles are not exported at all (see queries.battles): their rows would
name the contestants before the tournament's reveal."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.http import StreamingHttpResponse
from django.utils import timezone

from arena.battles.export import battle_record
from arena.generations.export import Absolute, csv_lines, download, generation_record

FORMATS = ("csv", "json")
DATASETS = ("battles", "generations")
CHUNK = 200  # rows fetched per query (and per prefetch)

_SIDE = ["model", "model_name", "system_prompt", "params", "status", "text", "finish_reason", "failure_reason",
         "prompt_tokens", "generated_tokens", "time_to_first_token_s", "tokens_per_s", "load_wait_s", "queue_wait_s",
         "cached", "cached_from", "generation_id"]

COLUMNS = {
    "battles": ["id", "created_at", "mode", "blind", "tag", "prompt", "history",
                "left_model", "right_model", "outcome", "winner_model", "judge", "jury", "orders_agree", "tie_reason",
                "judgements", "voted_at",
                *[f"{side}_{k}" for k in _SIDE[2:] for side in ("left", "right")],
                "left_model_name", "right_model_name", "self_identified", "parent_id", "tournament_id", "permalink"],
    "generations": ["id", "created_at", "origin", "model", "model_name", "tag", "prompt", "system_prompt", "history",
                    "params", "status", "text", "finish_reason", "failure_reason", "prompt_tokens",
                    "generated_tokens", "time_to_first_token_s", "tokens_per_s", "load_wait_s", "queue_wait_s",
                    "cached", "cached_from", "finished_at", "permalink"],
}


def records(dataset: str, queryset, absolute: Absolute) -> Iterator[dict]:
    build: Callable[[Any, Absolute], dict]  # a Battle's or a Generation's record
    if dataset == "battles":
        queryset = queryset.prefetch_related("tournament_matches")
        build = battle_record
    else:
        build = generation_record
    for obj in queryset.iterator(chunk_size=CHUNK):
        yield build(obj, absolute)


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
