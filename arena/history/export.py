"""Battles and generations as CSV or JSON, streamed row by row.

A record is built once per object (nested, for JSON) and flattened for CSV. Model output
is untrusted: a CSV cell that starts with = + - @, a tab or a carriage return gets a
leading apostrophe, so a spreadsheet shows it as text instead of running it as a formula
(OWASP's "CSV injection"). JSON is written as it is.

Unrevealed blind battles are not exported at all (see queries.battles): their rows would
name the contestants before the tournament's reveal."""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Callable, Iterable, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.core.serializers.json import DjangoJSONEncoder
from django.http import StreamingHttpResponse
from django.utils import timezone

from arena.battles.judging import orders_agree
from arena.battles.models import Battle
from arena.generations.models import Generation

FORMATS = ("csv", "json")
DATASETS = ("battles", "generations")
CHUNK = 200  # rows fetched per query (and per prefetch)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

Absolute = Callable[[str], str]
TIE_REASON = "the two orders disagreed"  # a model judge's tie that is not its verdict


# --- records -----------------------------------------------------------------------------
def _iso(value):
    return value.isoformat() if value else None


def side_record(gen: Generation) -> dict:
    return {
        "generation_id": str(gen.id),
        "model": gen.model.slug,
        "model_name": gen.model.name,
        "system_prompt": gen.system_prompt,
        "params": gen.params,
        "status": gen.status,
        "text": gen.text,
        "finish_reason": gen.finish_reason,
        "failure_reason": gen.failure_reason,
        "prompt_tokens": gen.prompt_tokens,
        "generated_tokens": gen.generated_tokens,
        "time_to_first_token_s": gen.time_to_first_token_s,  # from when the worker began: load and queue apart
        "tokens_per_s": gen.tokens_per_s,
        "load_wait_s": gen.load_wait_s,
        "queue_wait_s": gen.queue_wait_s,
    }


def battle_record(battle: Battle, absolute: Absolute) -> dict:
    winner = {"left": battle.left, "right": battle.right}.get(battle.outcome)
    agree = orders_agree(battle.judgements) if battle.judge_id else None
    matches = list(battle.tournament_matches.all())  # prefetched
    return {
        "id": str(battle.id),
        "created_at": _iso(battle.created_at),
        "mode": battle.mode,
        "blind": battle.blind,
        "tag": battle.tag,
        "prompt": battle.prompt,
        "history": battle.left.history,
        "outcome": battle.outcome or None,
        "winner_model": winner.model.slug if winner else None,
        "judge": battle.judge.slug if battle.judge_id else None,  # a model judge's verdict, never a person's
        # A model judge's two readings (one per order shown) and whether they agreed: a pair on
        # which they disagree is a tie for that reason alone (arena.battles.judging).
        "judgements": battle.judgements if battle.judge_id else None,
        "orders_agree": agree,
        "tie_reason": TIE_REASON if agree is False else None,
        "voted_at": _iso(battle.voted_at),
        "self_identified": battle.self_identified,
        "parent_id": str(battle.parent_id) if battle.parent_id else None,
        "tournament_id": str(matches[0].tournament_id) if matches else None,
        "left": side_record(battle.left),
        "right": side_record(battle.right),
        "permalink": absolute(battle.get_absolute_url()),
    }


def generation_record(gen: Generation, absolute: Absolute) -> dict:
    answer = {name: value for name, value in side_record(gen).items() if name != "generation_id"}
    return {
        "id": str(gen.id),
        "created_at": _iso(gen.created_at),
        "origin": gen.origin,
        "tag": gen.tag,
        "prompt": gen.prompt,
        "history": gen.history,
        **answer,
        "finished_at": _iso(gen.finished_at),
        "permalink": absolute(gen.get_absolute_url()),
    }


_SIDE = ["model", "model_name", "system_prompt", "params", "status", "text", "finish_reason", "failure_reason",
         "prompt_tokens", "generated_tokens", "time_to_first_token_s", "tokens_per_s", "load_wait_s", "queue_wait_s",
         "generation_id"]

COLUMNS = {
    "battles": ["id", "created_at", "mode", "blind", "tag", "prompt", "history",
                "left_model", "right_model", "outcome", "winner_model", "judge", "orders_agree", "tie_reason",
                "judgements", "voted_at",
                *[f"{side}_{k}" for k in _SIDE[2:] for side in ("left", "right")],
                "left_model_name", "right_model_name", "self_identified", "parent_id", "tournament_id", "permalink"],
    "generations": ["id", "created_at", "origin", "model", "model_name", "tag", "prompt", "system_prompt", "history",
                    "params", "status", "text", "finish_reason", "failure_reason", "prompt_tokens",
                    "generated_tokens", "time_to_first_token_s", "tokens_per_s", "load_wait_s", "queue_wait_s",
                    "finished_at", "permalink"],
}


def flatten(record: dict) -> dict:
    """A nested record as one CSV row: each side's fields prefixed with left_/right_."""
    flat = {}
    for key, value in record.items():
        if key in ("left", "right"):
            flat.update({f"{key}_{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


def records(dataset: str, queryset, absolute: Absolute) -> Iterator[dict]:
    if dataset == "battles":
        queryset = queryset.prefetch_related("tournament_matches")
        build = battle_record
    else:
        build = generation_record
    for obj in queryset.iterator(chunk_size=CHUNK):
        yield build(obj, absolute)


# --- formats -----------------------------------------------------------------------------
def csv_cell(value) -> str | int | float:
    """A value as a safe CSV cell: None empty, JSON for structures, formulas neutralised."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        value = json.dumps(value, ensure_ascii=False, sort_keys=True)
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


class _Line:
    """A file-like object csv.writer writes one line to, which it hands straight back."""

    def write(self, value: str) -> str:
        return value


def csv_lines(columns: list[str], rows: Iterable[dict]) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(columns)
    for record in rows:
        flat = flatten(record)
        yield writer.writerow([csv_cell(flat.get(column)) for column in columns])


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


CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json",
                 "jsonl": "application/x-ndjson"}


def download(request, chunks: Iterator[str], fmt: str, name: str) -> StreamingHttpResponse:
    """Streamed `chunks` as a private download named `name` (other exports use it too: a suite run's)."""
    body = _async(chunks) if isinstance(request, ASGIRequest) else chunks
    resp = StreamingHttpResponse(body, content_type=CONTENT_TYPES[fmt])
    resp["Content-Disposition"] = f'attachment; filename="{name}"'
    resp["Cache-Control"] = "private, no-store"
    return resp


async def _async(chunks: Iterator[str], batch: int = 64):
    """Under ASGI (daphne) Django would read a synchronous iterator to the end before
    sending anything; this hands the rows over a batch at a time instead, reading the
    database in the request's own thread (thread_sensitive), where its connection lives."""
    iterator = iter(chunks)
    take = sync_to_async(lambda: list(itertools.islice(iterator, batch)), thread_sensitive=True)
    while part := await take():
        for chunk in part:
            yield chunk
