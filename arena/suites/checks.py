"""Checks of one answer: deterministic assertions a suite's prompts carry, in the style of
promptfoo's assertions. Pure: no Django, no database; the suites app checks the specs when a
suite is imported (`parse`), the suite runner evaluates them when an answer lands (`evaluate`).

A check spec is a JSON object with a "type" and the type's own fields, plus these, optional on
every type:

- "weight": a number > 0 (default 1): its share of the answer's weighted score;
- "name": the metric name shown in results and pass rates (default: the type, "not_<type>" when
  negated); checks of the same name are counted together across prompts;
- "not": true negates the check (a check that could not be evaluated, e.g. a regex that ran out
  of time or a speed never measured, fails whether negated or not);
- "threshold": 0..1, for a check with a score (similar): it passes at or above it.

Types (TYPES; `value` is required where shown):

    {"type": "equals", "value": "Paris", "ignore_case": true}      the whole answer, trimmed
    {"type": "contains", "value": "refund window", "ignore_case": true}
    {"type": "contains", "value": ["30 days", "thirty days"], "mode": "any"}   (mode: all by default)
    {"type": "not_contains", "value": ["As an AI"], "ignore_case": true}       none of them
    {"type": "starts_with", "value": "Dear"}                        the answer, leading blanks skipped
    {"type": "regex", "value": "^\\d+$", "ignore_case": false}     searched anywhere (use ^...$ for all)
    {"type": "is_json"}                                             the whole answer, trimmed, parses
    {"type": "json_schema", "value": {...}}                         parses and is valid for the schema
    {"type": "words", "min": 5, "max": 150}                         whitespace-separated words
    {"type": "tokens", "min": 5, "max": 300}                        tokens generated (the engine's count)
    {"type": "number", "value": 42, "tolerance": 0.5}               the answer's last number, within it
    {"type": "similar", "metric": "chrf", "threshold": 0.6}         against the prompt's reference
    {"type": "ttft", "max": 1.0}                                    seconds to the first token
    {"type": "tokens_per_s", "min": 20}                             decode rate after the first token
    {"type": "total_time", "max": 10}                               seconds from the first token's request to the end

Bounds ("min", "max") are numbers >= 0, at least one given. "similar" scores chrF (sacrebleu's,
0..1; default threshold 0.5). A "rubric" type (a judge model reading the answer against a rubric)
is reserved and refused until it exists.

No check runs code from a suite: no eval, no templates. A regex runs under REGEX_TIMEOUT_S (the
`regex` module's timeout): a pathological pattern fails its check with a reason instead of hanging.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import regex
from sacrebleu.metrics import CHRF

REGEX_TIMEOUT_S = 0.25  # far beyond any sane pattern on an answer; `regex` stops near twice this
MAX_CHECKS = 50  # a prompt's own, and a suite's defaults, each
MAX_VALUE_CHARS = 2_000  # a contains/equals/regex value
MAX_SCHEMA_CHARS = 20_000
SHORT = 60  # characters of an answer quoted in `got`
COMMON = {"type", "weight", "name", "not", "threshold"}
METRICS = ("chrf",)
METRIC_LABELS = {"chrf": "chrF"}
DEFAULT_THRESHOLD = 0.5
RESERVED = {"rubric": "the rubric check (a judge model reading the answer against a rubric) is not available yet"}


class CheckError(ValueError):
    """A spec that is not a check; the message is a sentence fit for the user."""


@dataclass(frozen=True)
class Answer:
    """What a check reads: the answer's text, the prompt's reference, and the generation's
    measures (METRIC_NAMES: None or absent when not measured)."""

    text: str
    reference: str = ""
    metrics: Mapping[str, float | None] = field(default_factory=dict)


# The measures a check reads from Answer.metrics (the suite runner fills them from the generation).
METRIC_NAMES = ("ttft_s", "tokens_per_s", "total_time_s", "generated_tokens")


@dataclass(frozen=True)
class Check:
    """A parsed spec: its type, shown name, weight, threshold (score checks), negation and the
    type's own fields (`params`); `spec` is the object it was read from."""

    type: str
    name: str
    weight: float
    negate: bool
    threshold: float | None
    params: Mapping[str, Any]
    spec: Mapping[str, Any]
    compiled: Any = None  # a regex pattern, a schema validator, or None


@dataclass(frozen=True)
class Result:
    """One check of one answer: `passed`, `score` 0..1 (1/0 for a pass/fail check), what it
    wanted (`expected`) and what it found (`got`), both short; `error`: why it could not be
    evaluated ("" when it was)."""

    name: str
    type: str
    passed: bool
    score: float
    weight: float
    expected: str
    got: str
    error: str = ""

    def as_json(self) -> dict:
        return {"name": self.name, "type": self.type, "passed": self.passed, "score": round(self.score, 4),
                "weight": self.weight, "expected": self.expected, "got": self.got, "error": self.error}


@dataclass(frozen=True)
class Verdict:
    """An answer's checks together: it passes when every check passes; `score` the checks'
    scores weighted (1.0 with no check)."""

    passed: bool
    score: float
    failed: tuple[str, ...]


# --- reading a spec ----------------------------------------------------------------------------
def _number(spec: Mapping, key: str, *, low: float | None = 0.0, high: float | None = None) -> float | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise CheckError(f"'{key}' must be a number, not {value!r}")
    if low is not None and value < low:
        raise CheckError(f"'{key}' must be at least {low:g}, not {value:g}")
    if high is not None and value > high:
        raise CheckError(f"'{key}' must be at most {high:g}, not {value:g}")
    return float(value)


def _flag(spec: Mapping, key: str) -> bool:
    value = spec.get(key, False)
    if not isinstance(value, bool):
        raise CheckError(f"'{key}' must be true or false, not {value!r}")
    return value


def _string(spec: Mapping, key: str = "value") -> str:
    value = spec.get(key)
    if not isinstance(value, str) or not value:
        raise CheckError(f"'{key}' must be a non-empty string")
    if len(value) > MAX_VALUE_CHARS:
        raise CheckError(f"'{key}' is {len(value)} characters, at most {MAX_VALUE_CHARS} allowed")
    return value


def _strings(spec: Mapping) -> list[str]:
    value = spec.get("value")
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values:
        raise CheckError("'value' must be a non-empty string or a list of them")
    return [_string({"value": v}) for v in values]


def _bounds(spec: Mapping) -> dict:
    low, high = _number(spec, "min"), _number(spec, "max")
    if low is None and high is None:
        raise CheckError("give 'min', 'max' or both")
    if low is not None and high is not None and low > high:
        raise CheckError(f"'min' ({low:g}) is above 'max' ({high:g})")
    return {"min": low, "max": high}


def _text_params(spec: Mapping) -> dict:
    return {"value": _string(spec), "ignore_case": _flag(spec, "ignore_case")}


def _contains_params(spec: Mapping) -> dict:
    mode = spec.get("mode", "all")
    if mode not in ("all", "any"):
        raise CheckError(f"'mode' is 'all' or 'any', not {mode!r}")
    return {"value": _strings(spec), "ignore_case": _flag(spec, "ignore_case"), "mode": mode}


def _regex_params(spec: Mapping) -> dict:
    return {"value": _string(spec), "ignore_case": _flag(spec, "ignore_case")}


def _schema_params(spec: Mapping) -> dict:
    schema = spec.get("value")
    if not isinstance(schema, dict):
        raise CheckError("'value' must be a JSON Schema (a JSON object)")
    if len(json.dumps(schema)) > MAX_SCHEMA_CHARS:
        raise CheckError(f"the JSON schema is too long (at most {MAX_SCHEMA_CHARS} characters)")
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path)
        raise CheckError(f"not a valid JSON schema{f' (at {where})' if where else ''}: {exc.message}") from None
    except RecursionError:
        raise CheckError("the JSON schema is nested too deeply") from None
    return {"value": schema}


def _number_params(spec: Mapping) -> dict:
    if spec.get("value") is None:
        raise CheckError("'value' (the expected number) is missing")
    return {"value": _number(spec, "value", low=None), "tolerance": _number(spec, "tolerance") or 0.0}


def _similar_params(spec: Mapping) -> dict:
    metric = spec.get("metric", "chrf")
    if metric not in METRICS:
        raise CheckError(f"'metric' is one of {', '.join(METRICS)}, not {metric!r}")
    return {"metric": metric}


def _no_params(spec: Mapping) -> dict:
    return {}


@dataclass(frozen=True)
class Kind:
    """A check type: the fields it takes, how they are read, whether it has a score, and how it
    is evaluated (`run`: (check, answer) -> (passed, score or None, got))."""

    fields: frozenset[str]
    read: Callable[[Mapping], dict]
    run: Callable[[Check, Answer], tuple[bool, float | None, str]]
    scored: bool = False


def parse(spec: Any) -> Check:
    """A check from its spec, or CheckError saying what is wrong with it."""
    if not isinstance(spec, dict):
        raise CheckError("a check must be a JSON object with a 'type'")
    kind_name = spec.get("type")
    if not isinstance(kind_name, str) or kind_name not in TYPES:
        if isinstance(kind_name, str) and kind_name in RESERVED:
            raise CheckError(RESERVED[kind_name])
        raise CheckError(f"unknown type {kind_name!r} (known: {', '.join(TYPES)})")
    kind = TYPES[kind_name]
    try:
        json.dumps(spec, allow_nan=False)
    except ValueError:  # Python's json reads NaN and 1e400; PostgreSQL's jsonb stores neither
        raise CheckError(f"{kind_name}: holds a number JSON cannot store (NaN or infinity)") from None
    except RecursionError:
        raise CheckError(f"{kind_name}: nested too deeply") from None
    if unknown := sorted(set(spec) - COMMON - kind.fields):
        raise CheckError(f"{kind_name}: unknown field(s) {', '.join(map(repr, unknown))}")
    try:
        params = kind.read(spec)
        weight = _number(spec, "weight")
        threshold = _number(spec, "threshold", high=1.0)
        negate = _flag(spec, "not")
    except CheckError as exc:
        raise CheckError(f"{kind_name}: {exc}") from None
    if weight == 0:
        raise CheckError(f"{kind_name}: 'weight' must be above 0")
    if threshold is not None and not kind.scored:
        raise CheckError(f"{kind_name}: 'threshold' applies only to a check with a score (similar)")
    name = spec.get("name")
    if name is not None and (not isinstance(name, str) or not name.strip() or len(name) > 100):
        raise CheckError(f"{kind_name}: 'name' must be a non-empty string of at most 100 characters")
    default_name = f"not_{kind_name}" if negate else kind_name
    if kind.scored and threshold is None:
        threshold = DEFAULT_THRESHOLD
    return Check(kind_name, (name or default_name).strip(), 1.0 if weight is None else weight, negate,
                 threshold, params, dict(spec), _compile(kind_name, params))


def _compile(kind_name: str, params: dict) -> Any:
    if kind_name == "regex":
        try:
            return regex.compile(params["value"], regex.IGNORECASE if params["ignore_case"] else 0)
        except regex.error as exc:
            raise CheckError(f"regex: not a valid regex: {exc}") from None
    if kind_name == "json_schema":
        schema = params["value"]
        return jsonschema.validators.validator_for(schema)(schema)
    return None


def _parse_each(specs: Any) -> tuple[list[Check], list[str]]:
    if specs is None:
        return [], []
    if not isinstance(specs, list):
        return [], ["must be a list of check objects"]
    if len(specs) > MAX_CHECKS:
        return [], [f"at most {MAX_CHECKS} checks, not {len(specs)}"]
    parsed, found = [], []
    for index, spec in enumerate(specs):
        try:
            parsed.append(parse(spec))
        except CheckError as exc:
            found.append(f"check {index}: {exc}")
    return parsed, found


def problems(specs: Any) -> list[str]:
    """Every problem with a list of specs (a suite's defaults or a prompt's own), each naming
    the check's index from 0: "check 2: regex: not a valid regex: ..." ([]: all are checks)."""
    return _parse_each(specs)[1]


def parse_all(specs: Any) -> list[Check]:
    """A list of specs, parsed; CheckError with every problem (`problems`) if any is not a check."""
    parsed, found = _parse_each(specs)
    if found:
        raise CheckError("; ".join(found))
    return parsed


def needs_reference(specs: Any) -> list[int]:
    """The indexes of the checks that compare with the prompt's reference (similar)."""
    return [i for i, spec in enumerate(specs or []) if isinstance(spec, dict) and spec.get("type") == "similar"]


# --- evaluating -------------------------------------------------------------------------------
class Unmeasured(Exception):
    """The check cannot be evaluated on this answer (no reference, a measure missing, a regex
    out of time); the message says why."""


def _short(text: str, limit: int = SHORT) -> str:
    text = " ".join(text.split())
    return json.dumps(text if len(text) <= limit else text[: limit - 1] + "…", ensure_ascii=False)


def _fold(text: str, ignore_case: bool) -> str:
    return text.casefold() if ignore_case else text


def _equals(check: Check, answer: Answer) -> tuple[bool, float | None, str]:
    p = check.params
    return _fold(answer.text.strip(), p["ignore_case"]) == _fold(p["value"], p["ignore_case"]), None, \
        _short(answer.text.strip())


def _found(check: Check, answer: Answer) -> tuple[list[str], list[str]]:
    p = check.params
    text = _fold(answer.text, p["ignore_case"])
    found = [v for v in p["value"] if _fold(v, p["ignore_case"]) in text]
    return found, [v for v in p["value"] if v not in found]


def _contains(check: Check, answer: Answer) -> tuple[bool, float | None, str]:
    found, missing = _found(check, answer)
    passed = bool(found) if check.params["mode"] == "any" else not missing
    got = f"missing {', '.join(map(_short, missing))}" if missing else "all found"
    if check.params["mode"] == "any":
        got = f"found {', '.join(map(_short, found))}" if found else "none found"
    return passed, None, got


def _not_contains(check: Check, answer: Answer) -> tuple[bool, float | None, str]:
    found, _ = _found(check, answer)
    return not found, None, f"found {', '.join(map(_short, found))}" if found else "none found"


def _starts_with(check: Check, answer: Answer) -> tuple[bool, float | None, str]:
    p = check.params
    start = answer.text.lstrip()
    passed = _fold(start, p["ignore_case"]).startswith(_fold(p["value"], p["ignore_case"]))
    return passed, None, f"starts {_short(start, max(20, len(p['value']) + 10))}"


def _regex(check: Check, answer: Answer) -> tuple[bool, float | None, str]:
    try:
        match = check.compiled.search(answer.text, timeout=REGEX_TIMEOUT_S)
    except TimeoutError:
        raise Unmeasured(f"the regex took longer than {REGEX_TIMEOUT_S:g} s on this answer and was "
                         "stopped (a pattern that backtracks without end?)") from None
    return match is not None, None, f"matched {_short(match.group(0))}" if match else "no match"


def _json_value(answer: Answer) -> tuple[bool, Any, str]:
    try:
        return True, json.loads(answer.text.strip()), "valid JSON"
    except (ValueError, RecursionError) as exc:
        return False, None, f"not JSON ({str(exc)[:SHORT]})"


def _is_json(check: Check, answer: Answer) -> tuple[bool, float | None, str]:
    ok, _, got = _json_value(answer)
    return ok, None, got


def _json_schema(check: Check, answer: Answer) -> tuple[bool, float | None, str]:
    ok, value, got = _json_value(answer)
    if not ok:
        return False, None, got
    error = jsonschema.exceptions.best_match(check.compiled.iter_errors(value))
    if error is None:
        return True, None, "valid for the schema"
    where = "/".join(str(p) for p in error.absolute_path)
    return False, None, f"{f'at {where}: ' if where else ''}{error.message}"[:2 * SHORT]


def _in_bounds(check: Check, measured: float) -> bool:
    low, high = check.params["min"], check.params["max"]
    return (low is None or measured >= low) and (high is None or measured <= high)


def _words(check: Check, answer: Answer) -> tuple[bool, float | None, str]:
    count = len(answer.text.split())
    return _in_bounds(check, count), None, f"{count} words"


def _metric(answer: Answer, name: str, what: str) -> float:
    value = answer.metrics.get(name)
    if value is None:
        raise Unmeasured(f"no {what} was measured for this answer")
    return float(value)


def _measure(name: str, what: str, unit: str) -> Callable[[Check, Answer], tuple[bool, float | None, str]]:
    def run(check: Check, answer: Answer) -> tuple[bool, float | None, str]:
        value = _metric(answer, name, what)
        return _in_bounds(check, value), None, f"{value:.3g}{unit}"
    return run


NUMBER = re.compile(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def _number_check(check: Check, answer: Answer) -> tuple[bool, float | None, str]:
    numbers = NUMBER.findall(answer.text)
    if not numbers:
        return False, None, "no number"
    value = float(numbers[-1].replace(",", ""))
    passed = abs(value - check.params["value"]) <= check.params["tolerance"]
    return passed, None, f"{value:g}"


_CHRF = CHRF()


def _similar(check: Check, answer: Answer) -> tuple[bool, float | None, str]:
    if not answer.reference.strip():
        raise Unmeasured("the prompt has no reference answer to compare with")
    score = _CHRF.sentence_score(answer.text, [answer.reference]).score / 100
    assert check.threshold is not None
    return score >= check.threshold, score, f"chrF {score:.2f}"


def _expected(check: Check) -> str:
    """What the check wants, short, as results say it."""
    p, t = check.params, check.type
    case = " (any case)" if p.get("ignore_case") else ""
    if t in ("contains", "not_contains"):
        values = ", ".join(map(_short, p["value"]))
        quantifier = "" if len(p["value"]) == 1 else ("any of " if p["mode"] == "any" or t == "not_contains"
                                                      else "all of ")
        text = f"contains {quantifier}{values}{case}" if t == "contains" else f"contains none of {values}{case}"
    elif t in ("equals", "starts_with"):
        text = f"{t.replace('_', ' ')} {_short(p['value'])}{case}"
    elif t == "regex":
        text = f"matches /{p['value'][:SHORT]}/{'i' if p['ignore_case'] else ''}"
    elif t == "number":
        text = f"a number {p['value']:g}" + (f" ± {p['tolerance']:g}" if p["tolerance"] else "")
    elif t == "similar":
        text = f"{METRIC_LABELS[p['metric']]} ≥ {check.threshold:g} against the reference"
    elif "min" in p:
        text = _bounds_text(t, p)
    else:
        text = {"is_json": "valid JSON", "json_schema": "JSON valid for the schema"}[t]
    return f"not {text}" if check.negate else text


UNITS = {"words": " words", "tokens": " tokens", "ttft": " s to the first token", "tokens_per_s": " tokens/s",
         "total_time": " s in all"}


def _bounds_text(kind: str, p: Mapping) -> str:
    unit = UNITS[kind]
    if p["min"] is not None and p["max"] is not None:
        return f"{p['min']:g} to {p['max']:g}{unit}"
    bound, words = (p["min"], "at least") if p["min"] is not None else (p["max"], "at most")
    if bound == 1 and unit in (" words", " tokens"):
        unit = unit[:-1]  # "at most 1 word"
    return f"{words} {bound:g}{unit}"


def describe(spec: Any) -> str:
    """A stored spec in words, as a suite's page lists it: its name, what it wants, its weight."""
    try:
        check = parse(spec)
    except CheckError as exc:  # stored before a rule changed: say so rather than fail the page
        return f"not a check now: {exc}"
    weight = f" · weight {check.weight:g}" if check.weight != 1 else ""
    return f"{check.name}: {_expected(check)}{weight}"


def evaluate_one(check: Check, answer: Answer) -> Result:
    kind = TYPES[check.type]
    try:
        passed, score, got = kind.run(check, answer)
    except Unmeasured as exc:
        return Result(check.name, check.type, False, 0.0, check.weight, _expected(check), "not evaluated", str(exc))
    if score is None:
        score = 1.0 if passed else 0.0
    if check.negate:
        passed, score = not passed, 1.0 - score
    return Result(check.name, check.type, passed, score, check.weight, _expected(check), got)


def evaluate(checks: Iterable[Check], answer: Answer) -> list[Result]:
    """Every check on `answer`, in order."""
    return [evaluate_one(check, answer) for check in checks]


def verdict(results: list[Result]) -> Verdict:
    total = sum(r.weight for r in results)
    score = sum(r.weight * r.score for r in results) / total if total else 1.0
    failed = tuple(r.name for r in results if not r.passed)
    return Verdict(not failed, score, failed)


_BOUNDS = frozenset({"min", "max"})
_TEXT = frozenset({"value", "ignore_case"})
TYPES: dict[str, Kind] = {
    "equals": Kind(_TEXT, _text_params, _equals),
    "contains": Kind(_TEXT | {"mode"}, _contains_params, _contains),
    "not_contains": Kind(_TEXT, lambda s: {**_contains_params(s), "mode": "any"}, _not_contains),
    "starts_with": Kind(_TEXT, _text_params, _starts_with),
    "regex": Kind(_TEXT, _regex_params, _regex),
    "is_json": Kind(frozenset(), _no_params, _is_json),
    "json_schema": Kind(frozenset({"value"}), _schema_params, _json_schema),
    "words": Kind(_BOUNDS, _bounds, _words),
    "tokens": Kind(_BOUNDS, _bounds, _measure("generated_tokens", "token count", " tokens")),
    "number": Kind(frozenset({"value", "tolerance"}), _number_params, _number_check),
    "similar": Kind(frozenset({"metric"}), _similar_params, _similar, scored=True),
    "ttft": Kind(_BOUNDS, _bounds, _measure("ttft_s", "time to first token", " s")),
    "tokens_per_s": Kind(_BOUNDS, _bounds, _measure("tokens_per_s", "decode rate", " tokens/s")),
    "total_time": Kind(_BOUNDS, _bounds, _measure("total_time_s", "total time", " s")),
}
