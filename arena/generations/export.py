"""Generations as export records, and the streamed CSV or JSON download every export uses
(the history's, a suite run's): the rows below, battles' records in arena.battles.export.

A record is built once per object (nested, for JSON) and flattened for CSV. Model output
is untrusted: a CSV cell that starts with = + - @, a tab or a carriage return gets a
leading apostrophe, so a spreadsheet shows it as text instead of running it as a formula
(OWASP's "CSV injection"). JSON is written as it is."""

from __future__ import annotations

import csv
import itertools
import json
from collections.abc import Callable, Iterable, Iterator

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse

from .models import Generation

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

Absolute = Callable[[str], str]


# --- records -----------------------------------------------------------------------------
def iso(value):
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
        # None while its owner's blind verdict is pending (arena/generations/readiness.py).
        "load_wait_s": None if gen.readiness_withheld() else gen.load_wait_s,
        "queue_wait_s": None if gen.readiness_withheld() else gen.queue_wait_s,
        # Reused from an identical earlier request (arena/generations/cache.py): its figures are that one's.
        "cached": gen.cached,
        "cached_from": str(gen.cached_from_id) if gen.cached_from_id else None,
    }


def generation_record(gen: Generation, absolute: Absolute) -> dict:
    answer = {name: value for name, value in side_record(gen).items() if name != "generation_id"}
    return {
        "id": str(gen.id),
        "created_at": iso(gen.created_at),
        "origin": gen.origin,
        "tag": gen.tag,
        "prompt": gen.prompt,
        "history": gen.history,
        **answer,
        "finished_at": iso(gen.finished_at),
        "permalink": absolute(gen.get_absolute_url()),
    }


# --- formats -----------------------------------------------------------------------------
def flatten(record: dict) -> dict:
    """A nested record as one CSV row: each side's fields prefixed with left_/right_."""
    flat = {}
    for key, value in record.items():
        if key in ("left", "right"):
            flat.update({f"{key}_{k}": v for k, v in value.items()})
        else:
            flat[key] = value
    return flat


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



# --- the response --------------------------------------------------------------------------
CONTENT_TYPES = {"csv": "text/csv; charset=utf-8", "json": "application/json",
                 "jsonl": "application/x-ndjson"}


def download(request, chunks: Iterator[str], fmt: str, name: str) -> StreamingHttpResponse:
    """Streamed `chunks` as a private download named `name` (every export: the history's, a suite run's)."""
    body = _async(chunks) if isinstance(request, ASGIRequest) else chunks
    resp = StreamingHttpResponse(body, content_type=CONTENT_TYPES[fmt])
    resp["Content-Disposition"] = f'attachment; filename="{name}"'
    resp["Cache-Control"] = "private, no-store"
    return resp


async def _async(chunks: Iterator[str], batch: int = 64):
    """Under ASGI (uvicorn) Django would read a synchronous iterator to the end before
    sending anything; this hands the rows over a batch at a time instead, reading the
    database in the request's own thread (thread_sensitive), where its connection lives."""
    iterator = iter(chunks)
    take = sync_to_async(lambda: list(itertools.islice(iterator, batch)), thread_sensitive=True)
    while part := await take():
        for chunk in part:
            yield chunk
