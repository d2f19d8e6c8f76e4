"""OpenAPI 3.1 path items of the suite run endpoints, assembled with the others in arena/openapi.py."""

from arena.api.openapi import LIMITED, PARAMS, TEXT, TOO_LARGE, UUID_ID, WHOSE, Schema, error_response, json_content
from arena.battles.judging import MAX_JUDGES
from arena.leaderboard.openapi import DECISION
from arena.suites.openapi import or_null

from . import comparing, comparison, judge, plan
from .actions import MAX_BUDGET
from .api import PARAM_FIELDS
from .models import SuiteRun

RUN_PARAMS = {**PARAMS, "description": "Sampling for every answer over each contestant's defaults (a prompt's "
              "constraint is added to it); null counts as absent.",
              "properties": {name: PARAMS["properties"][name] for name in sorted(PARAM_FIELDS)}}

_FORMAT = {"type": "string", "enum": SuiteRun.Format.values}

RESULT = {
    "type": "object",
    "description": "A contestant's tally: the model judge's verdicts, its answers, and how many of its answers "
                   "to constrained prompts followed their JSON schema or regex",
    "required": ["model", "wins", "losses", "ties", "answered", "failed", "constrained", "valid", "validity_rate"],
    "properties": {
        "model": {"type": "string", "description": "A catalogue slug"},
        **{name: {"type": "integer", "minimum": 0} for name in ("wins", "losses", "ties", "answered", "constrained",
                                                                "valid")},
        "failed": {"type": "integer", "minimum": 0, "description": "Answers that failed every attempt"},
        "validity_rate": {"type": ["number", "null"], "minimum": 0, "maximum": 1,
                          "description": "valid / constrained; null without constrained answers"},
    },
}

RUN_SUMMARY: Schema = {
    "type": "object",
    "required": ["id", "suite", "suite_version", "suite_versions", "format", "judge", "judges", "state", "progress",
                 "adaptive", "created_at", "finished_at", "url"],
    "properties": {
        "id": {"type": "string", "format": "uuid"},
        **WHOSE,
        "suite": {"type": "string", "format": "uuid"},
        "suite_version": {"type": "integer", "minimum": 1, "description": "The suite's version this run ran"},
        "suite_versions": {"type": "integer", "minimum": 1, "description": "The suite's versions now (its latest)"},
        "format": _FORMAT,
        "judge": {"type": ["string", "null"], "description": "The (first) judge's slug; null: people judge"},
        "judges": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_JUDGES,
                   "description": "Every judge's slug, in order (a jury of up to three decides by majority); "
                                  "empty: people judge"},
        "state": {"type": "string", "enum": SuiteRun.State.values},
        "reuse_answers": {"type": "boolean", "description": "Whether it reuses the answers of your earlier runs"},
        "progress": {"type": "object", "required": ["done", "total", "percent", "eta_s"], "properties": {
            "done": {"type": "integer", "minimum": 0},
            "total": {"type": "integer", "minimum": 0, "description": "0 until the runner's first step"},
            "percent": {"type": "integer", "minimum": 0, "maximum": 100},
            "eta_s": {"type": ["number", "null"], "description": "About how long the rest takes, at the pace so far"},
        }},
        "adaptive": {
            "type": ["object", "null"], "description": "An adaptive run's judge calls spent of its budget and why it "
                                                       "stopped choosing pairs; null: another format",
            "required": ["budget", "calls", "stop_reason", "stopped_because"],
            "properties": {
                "budget": {"type": "integer", "minimum": 2, "description": "Judge calls at most"},
                "calls": {"type": "integer", "minimum": 0, "description": "Judge calls made (every try counts)"},
                "stop_reason": {"type": "string", "enum": ["", *plan.STOP_REASONS],
                                "description": "\"\" while it goes on; separated: every adjacent pair's 95% interval "
                                               "excludes 0; budget: no call left for another pair; exhausted: no "
                                               "prompt left for the pairs still unresolved"},
                "stopped_because": {"type": "string", "description": "stop_reason in words"},
            }},
        "created_at": {"type": "string", "format": "date-time"},
        "finished_at": {"type": ["string", "null"], "format": "date-time"},
        "url": {"type": "string", "description": "The run's page"},
    },
}

_SHARE = {"type": ["number", "null"], "minimum": 0, "maximum": 1}
_INTERVAL = {"type": ["array", "null"], "items": {"type": "number"}, "minItems": 2, "maxItems": 2,
             "description": "95% bootstrap interval (seeded); null without a value"}
_COUNTED = {"type": "object", "required": ["count", "total", "value", "interval"],
            "properties": {"count": {"type": "integer", "minimum": 0}, "total": {"type": "integer", "minimum": 0},
                           "value": _SHARE,
                           "interval": {**_INTERVAL, "description": "95% Wilson interval; null when total is 0"}}}
KAPPA = {"kappa": {"type": ["number", "null"], "description": "Cohen's kappa; null: too few pairs, or undefined"},
         "interval": _INTERVAL, "pairs": {"type": "integer", "minimum": 0}}
RELIABILITY = {
    "type": "object",
    "required": ["judge", "pairs", "readings", "self_consistency", "position_bias", "tie_rate", "kappa_people",
                 "kappa_people_interval", "kappa_people_pairs"],
    "properties": {
        "judge": {"type": "string", "description": "A catalogue slug"},
        "pairs": {"type": "integer", "minimum": 0, "description": "Pairs it read in both orders"},
        "readings": {"type": "integer", "minimum": 0, "description": "Readings that did not fail"},
        "self_consistency": {**_SHARE, "description": "Share of pairs whose two readings agree"},
        "position_bias": {**_SHARE, "description": "Share of decisive readings preferring the answer shown first"},
        "tie_rate": {**_SHARE, "description": "Share of readings saying a tie"},
        "kappa_people": {"type": ["number", "null"], "description": "Cohen's kappa with people's verdicts"},
        "kappa_people_interval": _INTERVAL,
        "kappa_people_pairs": {"type": "integer", "minimum": 0, "description": "Pairs both it and people judged"},
        "verdict": {"type": "string", "enum": ["reliable", "unreliable", "not enough readings"],
                    "description": "The judge checked (docs/leaderboard.md, 'Judges checked before they count'): "
                                   "unreliable verdicts stay out of the leaderboard and the run's charts unless asked"},
        "sentence": {"type": "string", "description": "The verdict in words, with the figures that gave it"},
        "consistent": {**_COUNTED, "description": "Pairs whose two readings agree, of the pairs read both ways"},
        "first": {**_COUNTED, "description": "Decisive readings naming the answer shown first, of the decisive ones"},
        "ties": {**_COUNTED, "description": "Readings saying a tie, of the readings"},
    },
}

_RATE = {"passed": {"type": "integer", "minimum": 0}, "total": {"type": "integer", "minimum": 0},
         "rate": _SHARE, "low": _SHARE, "high": _SHARE}
_DOLLARS = {"type": ["number", "null"], "minimum": 0}
COST = {
    "type": "object",
    "description": "What the contestant's done answers cost at its catalogue entry's price (docs/suites.md, Cost "
                   "per answer); all null without a price",
    "required": ["price", "currency", "per_answer", "per_passing_answer", "answers_priced", "answers_unmeasured"],
    "properties": {
        "price": {"type": ["string", "null"], "description": "The entry's price in words; null: no price"},
        "currency": {"type": "string", "enum": ["USD"]},
        "per_answer": {**_DOLLARS, "description": "Mean cost of an answer; null: no price, or none measured"},
        "per_passing_answer": {**_DOLLARS, "description": "What its checked answers cost, divided by those that "
                                                          "passed; null: no price, or no passing answer"},
        "answers_priced": {"type": "integer", "minimum": 0, "description": "Answers whose cost was measured"},
        "answers_unmeasured": {"type": "integer", "minimum": 0,
                               "description": "Done answers without the figures the price needs (token counts, "
                                              "or the time to the first token and tokens/s for an hourly price)"},
        "checked_priced": {"type": "integer", "minimum": 0},
        "passing_priced": {"type": "integer", "minimum": 0},
    },
}
_PER_CONTESTANT = {"type": "array", "items": {
    "type": "object", "required": ["name", "contestants"],
    "properties": {"name": {"type": "string"}, "contestants": {"type": "array", "items": {
        "type": "object", "required": ["model", "passed", "total"],
        "properties": {"model": {"type": "string"}, **_RATE}}}}}}
CHECK_RATES = {
    "type": ["object", "null"],
    "description": "The pass rates of the run's checked answers (docs/suites.md, Checks), each with its 95% Wilson "
                   "interval (low, high): per contestant (an answer passes when all its checks pass, with what its "
                   "answers cost), per check name per contestant, and per prompt tag per contestant (tags in "
                   "alphabetical order); null while no answer has a check",
    "required": ["contestants", "checks", "tags", "checked_at", "pending"],
    "properties": {
        "contestants": {"type": "array", "items": {"type": "object", "required": ["model", "passed", "total", "cost"],
                                                   "properties": {"model": {"type": "string"}, **_RATE,
                                                                  "mean_score": _SHARE, "cost": COST}}},
        "checks": _PER_CONTESTANT,
        "tags": {**_PER_CONTESTANT, "description": "Per tag of the run's prompts: the answers to the prompts carrying "
                                                   "it (a prompt with several tags counts under each)"},
        "checked_at": {"type": ["string", "null"], "format": "date-time",
                       "description": "When an answer was last checked (a re-check updates it)"},
        "pending": {"type": "integer", "minimum": 0,
                    "description": "Done answers not checked yet (just landed, or a re-check's rest), in no rate"},
    },
}
CHECK_RESULT = {"type": "object", "required": ["name", "type", "passed", "score", "weight", "expected", "got", "error"],
                "properties": {"name": {"type": "string"}, "type": {"type": "string"}, "passed": {"type": "boolean"},
                               "score": {"type": "number"}, "weight": {"type": "number"},
                               "expected": {"type": "string"}, "got": {"type": "string"},
                               "error": {"type": "string",
                                         "description": "Why it could not be evaluated (\"\": it was)"},
                               # a rubric check's (docs/suites.md, "The rubric check")
                               "pending": {"type": "boolean", "description": "Rubric: waiting for the judge's grade "
                                           "(the answer's passed and score are null until it lands)"},
                               "key": {"type": "string", "description": "Rubric: names the check's spec"},
                               "grades": {"type": "array", "description": "Rubric: each judge's grade once graded",
                                          "items": {"type": "object", "required": ["judge", "grade", "reason"],
                                                    "properties": {
                                                        "judge": {"type": "string"},
                                                        "grade": {"type": ["boolean", "integer", "null"],
                                                                  "description": "pass/fail, 1..5, or null: its "
                                                                                 "reply failed or was unreadable"},
                                                        "reason": {"type": "string"},
                                                        "generation": {"type": "string"}}}}}}
RUBRIC_RELIABILITY = {
    "type": "array",
    "description": "Each judge that graded this run's rubric checks (docs/suites.md, \"The rubric check\"): how "
                   "often its grade stayed the same with the answer shown before the rubric (a sample graded "
                   "twice), the share of answers it passed, how often it sided with the owner's revealed blind "
                   "verdicts on pairs it graded apart; each with its 95% Wilson interval; its verdict and why",
    "items": {"type": "object", "required": ["judge", "verdict", "sentence", "consistent", "passes", "people"],
              "properties": {"judge": {"type": "string"},
                             "verdict": {"type": "string", "enum": ["reliable", "unreliable", "not enough readings"]},
                             "sentence": {"type": "string"}, "consistent": _COUNTED, "passes": _COUNTED,
                             "people": _COUNTED}},
}
ANSWER = {
    "type": "object",
    "required": ["prompt_position", "contestant", "status", "attempts", "generation_id", "passed", "score", "checks"],
    "properties": {
        "prompt_position": {"type": "integer", "minimum": 1}, "contestant": {"type": "string"},
        "status": {"type": "string"}, "attempts": {"type": "integer"}, "generation_id": {"type": "string"},
        "passed": {"type": ["boolean", "null"],
                   "description": "Every check passed; null: not checked yet, or no check"},
        "score": {**_SHARE, "description": "The checks' scores, weighted"},
        "checks": {"type": "array", "items": CHECK_RESULT},
    },
}

RUN = {**RUN_SUMMARY, "required": [*RUN_SUMMARY["required"], "results", "checks", "rubric_reliability"],
       "properties": {**RUN_SUMMARY["properties"],
                      "results": {"type": "array", "items": RESULT, "description": "Per contestant, in order"},
                      "checks": CHECK_RATES,
                      "rubric_reliability": RUBRIC_RELIABILITY,
                      "judge_agreement": {
                          "type": ["object", "null"],
                          "description": ("How often the judge said the same when shown each answer first (a pair "
                                          "whose two orders disagree is a tie); null: no judge or no pair yet"),
                          "properties": {"agreed": {"type": "integer"}, "total": {"type": "integer"},
                                         "percent": {"type": "integer"}}},
                      "judge_reliability": {
                          "type": ["object", "null"],
                          "description": "Each judge's reliability on this run's pairs "
                                         "(arena.leaderboard.reliability): each share with its counts and "
                                         "95% Wilson interval (null: nothing to count), its verdict and "
                                         "sentence; kappa is null below min_pairs pairs; null: people judge",
                          "required": ["min_pairs", "judges", "between"],
                          "properties": {
                              "min_pairs": {"type": "integer", "minimum": 1},
                              "judges": {"type": "array", "items": RELIABILITY},
                              "between": {"type": "array", "description": "Every two judges' agreement",
                                          "items": {"type": "object",
                                                    "required": ["a", "b", "kappa", "interval", "pairs"],
                                                    "properties": {"a": {"type": "string"}, "b": {"type": "string"},
                                                                   **KAPPA}}}}},
                      "decision": {**DECISION, "type": ["object", "null"],
                                   "description": "What to pick from this run's own verdicts (as the leaderboard's "
                                   "decision); with a judge marked unreliable whose readings every verdict counted, "
                                   "no contender and a sentence saying so unless unreliable=include; null while the "
                                   "run is live or has no verdict"}}}

OPENAPI_PATHS = {
    "/api/v1/suite-runs": {
        "post": {
            "operationId": "createSuiteRun",
            "summary": "Run a prompt suite: each contestant answers every prompt, pairs judged by a model or by people",
            "requestBody": {"required": True, **json_content({
                "type": "object",
                "required": ["suite", "contestants"],
                "additionalProperties": False,
                "allOf": [
                    # A budget (not null) is an adaptive run's only.
                    {"if": {"required": ["budget"], "properties": {"budget": {"type": "integer"}}},
                     "then": {"required": ["format"], "properties": {"format": {"const": SuiteRun.Format.ADAPTIVE}}}},
                    # Adaptive and Swiss choose their pairs from a model judge's verdicts: they need one.
                    {"if": {"required": ["format"], "properties": {"format": {"enum": [SuiteRun.Format.ADAPTIVE,
                                                                                       SuiteRun.Format.SWISS]}}},
                     "then": {"anyOf": [{"required": ["judge"], "properties": {"judge": {"type": "string"}}},
                                        {"required": ["judges"], "properties": {"judges": {"type": "array"}}}]}},
                    # A Swiss run needs 8 or more contestants.
                    {"if": {"required": ["format"], "properties": {"format": {"const": SuiteRun.Format.SWISS}}},
                     "then": {"properties": {"contestants": {"minItems": SuiteRun.MIN_SWISS}}}},
                    # One contestant: its answers are only checked, no judge compares them.
                    {"if": {"required": ["contestants"], "properties": {"contestants": {"maxItems": 1}}},
                     "then": {"not": {"anyOf": [
                         {"required": ["judge"], "properties": {"judge": {"type": "string"}}},
                         {"required": ["judges"], "properties": {"judges": {"type": "array"}}}]}}},
                ],
                "properties": {
                    "suite": {"type": "string", "format": "uuid", "description": "One of your suites"},
                    "contestants": {"type": "array", "uniqueItems": True, "items": {"type": "string"},
                                    "minItems": SuiteRun.MIN_CONTESTANTS, "maxItems": SuiteRun.MAX_CONTESTANTS,
                                    "description": "Distinct enabled catalogue slugs, in order (a knockout's seeds, "
                                                   "the tie-break of adaptive and Swiss rankings)"},
                    "format": {**_FORMAT, "default": SuiteRun.Format.ROUND_ROBIN,
                               "description": "round_robin: every pair on every prompt; knockout: a bracket per "
                                              "prompt; adaptive: the pair and prompt the ranking is least sure of, "
                                              "one after another, until every adjacent pair is separated or the "
                                              "budget is spent; swiss: rounds pairing similar scores, 8 or more "
                                              "contestants. adaptive and swiss need a judge"},
                    "budget": {"type": ["integer", "null"], "minimum": 2, "maximum": MAX_BUDGET,
                               "description": "adaptive only: judge calls at most (each pair is read twice); "
                                              "absent or null: half of a round robin's"},
                    "reuse_answers": {"type": ["boolean", "null"], "default": False,
                                      "description": "true: an identical greedy or seeded request (same model and "
                                                     "version, prompt and parameters) takes the answer of one of "
                                                     "your earlier runs instead of generating it (marked cached); "
                                                     "within the run this always happens. Absent or null: false"},
                    "judge": {"type": ["string", "null"],
                              "description": "An enabled catalogue slug: the model that judges each pair (in both "
                                             "orders); null: people judge (unless judges names a jury)"},
                    "judges": {"type": ["array", "null"], "items": {"type": "string"}, "minItems": 1,
                               "maxItems": MAX_JUDGES, "uniqueItems": True,
                               "description": "A jury instead of one judge: 1 to 3 distinct enabled catalogue "
                                              "slugs; each reads every pair in both orders, a judge's verdict is "
                                              "what its two readings agree on (else a tie), the pair's is the "
                                              "verdict of more than half of the judges who answered (no majority: "
                                              "a tie). With judge too, judge must be the first"},
                    "judge_template": or_null({
                        **TEXT, "maxLength": judge.MAX_TEMPLATE_CHARS,
                        "description": "The judge's prompt; it must show {question}, {answer_a} and {answer_b} and may "
                                       "show {reference}; a literal brace is written {{ or }}. Absent, null or "
                                       "\"\": the default"}),
                    "params": RUN_PARAMS,
                },
            })},
            "responses": {
                "201": {"description": "Started; the run goes on in the background", **json_content(RUN)},
                "400": error_response("Invalid request; `fields` names the field (an unknown or disabled slug, the "
                                      "number of contestants (a Swiss run needs 8), a format without the judge it "
                                      "needs, a budget out of range or for another format, the judge template, "
                                      "params out of range, a contestant that cannot follow a prompt's constraint)"),
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such suite (or not yours)"),
                **TOO_LARGE, **LIMITED,
            },
        },
        "get": {
            "operationId": "listSuiteRuns",
            "summary": "Your suite runs, newest first (without their results)",
            "responses": {
                "200": {"description": "Your runs", **json_content({
                    "type": "object", "required": ["suite_runs"],
                    "properties": {"suite_runs": {"type": "array", "items": RUN_SUMMARY}}})},
                "401": error_response("Missing or invalid token"),
            },
        },
    },
    "/api/v1/suite-runs/{id}": {
        "get": {
            "operationId": "getSuiteRun",
            "summary": "A suite run: its progress and each contestant's results so far",
            "parameters": [*UUID_ID, {"name": "unreliable", "in": "query", "required": False,
                                      "schema": {"type": "string", "enum": ["include"]},
                                      "description": "include: the decision also from the verdicts of a judge "
                                                     "marked unreliable (it says so)"}],
            "responses": {
                "200": {"description": "The run", **json_content(RUN)},
                "400": error_response("unreliable with a value other than include"),
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such suite run (or not yours)"),
            },
        },
    },
    "/api/v1/suite-runs/{id}/answers": {
        "get": {
            "operationId": "getSuiteRunAnswers",
            "summary": "A suite run's answers so far, each with its checks' results (what each check expected and got)",
            "parameters": UUID_ID,
            "responses": {
                "200": {"description": "The answers, in prompt then contestant order", **json_content({
                    "type": "object", "required": ["answers"],
                    "properties": {"answers": {"type": "array", "items": ANSWER}}})},
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such suite run (or not yours)"),
            },
        },
    },
    "/api/v1/suite-runs/{id}/recheck": {
        "post": {
            "operationId": "recheckSuiteRun",
            "summary": "Check every finished answer again against the suite's checks now (after they changed): "
                       "nothing is generated",
            "description": "Each answer gets the suite's default checks now, then its prompt's own (of the version "
                           "the run ran). About 10 s of checking happen before the reply; the rest in the "
                           "background. A running run may be re-checked too: it ends once every answer is checked.",
            "parameters": UUID_ID,
            "responses": {
                "200": {"description": "The run with its new pass rates", **json_content({
                    **RUN, "required": [*RUN["required"], "rechecked", "pending"],
                    "properties": {**RUN["properties"], "rechecked": {
                        "type": "integer", "minimum": 0, "description": "Answers checked before the reply"},
                        "pending": {"type": "integer", "minimum": 0,
                                    "description": "Answers left to check in the background (slow checks, such as "
                                                   "a regex that runs out of time): they read as not checked and "
                                                   "count in no pass rate until then"}}})},
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such suite run (or not yours)"),
            },
        },
    },
    "/api/v1/suite-runs/{id}/cancel": {
        "post": {
            "operationId": "cancelSuiteRun",
            "summary": "Stop a running suite run: nothing new starts and its live generations are cancelled",
            "parameters": UUID_ID,
            "responses": {
                "200": {"description": "The cancelled run", **json_content(RUN)},
                "401": error_response("Missing or invalid token"),
                "404": error_response("No such suite run (or not yours)"),
                "409": error_response("The run has already ended"),
            },
        },
    },
}


# --- a run compared with an earlier run (arena.suite_runs.comparison) ------------------------------
_PAIR = {"later": {"type": "string", "description": "A contestant of this run (a catalogue slug)"},
         "earlier": {"type": "string", "description": "The contestant of the earlier run it is compared with"}}
_OUTCOME = {"type": "string", "enum": [comparison.PASS, comparison.FAIL, comparison.NO_ANSWER, comparison.UNCHECKED],
            "description": "pass, fail (a check failed), no answer (it failed to generate), unchecked (not checked "
                           "yet, no check on the prompt, or no answer on that side)"}
_CHECK_SIDE = {"type": ["string", "null"], "enum": [comparison.PASS, comparison.FAIL, None],
               "description": "null: the answer had no such check"}
_BOUNDS = {"type": ["array", "null"], "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
_SIDE_RATE = {"type": "object", "required": ["passed", "total", "rate", "interval"],
              "properties": {"passed": {"type": "integer", "minimum": 0}, "total": {"type": "integer", "minimum": 0},
                             "rate": _SHARE, "interval": {**_BOUNDS, "description": "95% Wilson interval"}}}
_MEDIAN = {"type": "object", "required": ["median", "n"],
           "properties": {"median": {"type": ["number", "null"]}, "n": {"type": "integer", "minimum": 0}}}
_COMPARED_RUN = {"type": "object", "required": ["id", "suite_version", "state", "created_at", "contestants", "url"],
                 "properties": {"id": {"type": "string", "format": "uuid"},
                                "suite_version": {"type": "integer", "minimum": 1},
                                "state": {"type": "string", "enum": SuiteRun.State.values},
                                "created_at": {"type": "string", "format": "date-time"},
                                "contestants": {"type": "array", "items": {"type": "string"}},
                                "url": {"type": "string"}}}
COMPARISON = {
    "type": "object",
    "required": ["run", "earlier", "partial", "prompt_matching", "pairs", "unmatched", "prompts", "counts",
                 "regressions", "changes", "checks", "pass_rates", "speeds"],
    "properties": {
        "run": _COMPARED_RUN, "earlier": _COMPARED_RUN,
        "partial": {"type": "boolean", "description": "A run is still going: the answers checked so far"},
        "prompt_matching": {"type": "string", "description": "How prompts are matched across versions (by text)"},
        "pairs": {"type": "array", "items": {"type": "object", "required": ["later", "earlier"], "properties": _PAIR},
                  "description": "Who is compared with whom"},
        "unmatched": {"type": "object", "required": ["later", "earlier"],
                      "properties": {"later": {"type": "array", "items": {"type": "string"}},
                                     "earlier": {"type": "array", "items": {"type": "string"}}},
                      "description": "Contestants of each run in no pair"},
        "prompts": {"type": "object", "required": ["matched", "only_earlier", "only_later"], "properties": {
            "matched": {"type": "integer", "minimum": 0},
            **{side: {"type": "array", "items": {"type": "object", "required": ["position", "prompt"], "properties": {
                "position": {"type": "integer", "minimum": 1}, "prompt": {"type": "string"}}}}
               for side in ("only_earlier", "only_later")}}},
        "counts": {"type": "object", "required": list(comparison.KINDS),
                   "properties": {kind: {"type": "integer", "minimum": 0} for kind in comparison.KINDS}},
        "regressions": {"type": "integer", "minimum": 0,
                        "description": "Answers that passed and now fail (or give no answer), plus answers that "
                                       "still fail with a check that passed and now fails"},
        "changes": {"type": "array", "description": "One per matched prompt and pair, regressions first", "items": {
            "type": "object",
            "required": ["kind", "words", "later", "earlier", "prompt", "earlier_position", "later_position", "before",
                         "after", "checks_changed", "checks"],
            "properties": {
                "kind": {"type": "string", "enum": list(comparison.KINDS)}, "words": {"type": "string"}, **_PAIR,
                "prompt": {"type": "string"}, "earlier_position": {"type": "integer", "minimum": 1},
                "later_position": {"type": "integer", "minimum": 1}, "before": _OUTCOME, "after": _OUTCOME,
                "checks_changed": {"type": "boolean", "description": "The prompt's own checks differ between the "
                                                                     "versions, or a check was added, dropped or "
                                                                     "redefined between the two answers"},
                "checks": {"type": "array", "items": {
                    "type": "object",
                    "required": ["name", "before", "after", "expected", "got", "redefined", "expected_before"],
                    "properties": {"name": {"type": "string"}, "before": _CHECK_SIDE, "after": _CHECK_SIDE,
                                   "expected": {"type": "string"}, "got": {"type": "string"},
                                   "redefined": {"type": "boolean", "description": "On both answers, but what it "
                                                 "expects changed between the runs"},
                                   "expected_before": {"type": "string",
                                                       "description": "What it expected in the earlier run"}}}}}}},
        "checks": {"type": "array", "description": "Per check name and pair, over the matched prompts where both "
                                                   "answers had it", "items": {
            "type": "object", "required": ["name", "later", "earlier", "now_passes", "now_fails", "still_passes",
                                           "still_fails"],
            "properties": {"name": {"type": "string"}, **_PAIR,
                           **{k: {"type": "integer", "minimum": 0}
                              for k in ("now_passes", "now_fails", "still_passes", "still_fails")}}}},
        "pass_rates": {"type": "object", "required": ["method", "pairs"], "properties": {
            "method": {"type": "string", "description": "How the interval of a change is computed"},
            "pairs": {"type": "array", "items": {
                "type": "object", "required": ["later", "earlier", "prompts", "before", "after", "difference",
                                               "interval"],
                "properties": {**_PAIR, "prompts": {"type": "integer", "minimum": 0,
                                                    "description": "Matched prompts both answers were checked on"},
                               "before": _SIDE_RATE, "after": _SIDE_RATE,
                               "difference": {"type": ["number", "null"], "minimum": -1, "maximum": 1,
                                              "description": "after − before"},
                               "interval": {**_BOUNDS, "description": "95% Newcombe hybrid score interval"}}}}}},
        "speeds": {"type": "object", "required": ["method", "cached_left_out", "pairs"], "properties": {
            "method": {"type": "string"},
            "cached_left_out": {"type": "integer", "minimum": 0,
                                "description": "Cached answers left out (their figures were measured elsewhere)"},
            "pairs": {"type": "array", "items": {
                "type": "object", "required": ["later", "earlier", "measure", "before", "after", "difference",
                                               "ratio", "interval"],
                "properties": {**_PAIR, "measure": {"type": "string", "enum": ["tokens_per_s", "ttft_s"]},
                               "before": _MEDIAN, "after": _MEDIAN, "difference": {"type": ["number", "null"]},
                               "ratio": {"type": ["number", "null"]},
                               "interval": {**_BOUNDS, "description": "95% bootstrap interval of the difference of "
                                                                      "the medians; null: under 2 answers a side"}}}}}},
    },
}

OPENAPI_PATHS["/api/v1/suite-runs/{id}/compare/{earlier_id}"] = {
    "get": {
        "operationId": "compareSuiteRuns",
        "summary": "A suite run against an earlier run of the same suite: per prompt and check what now passes and "
                   "what now fails (regressions first), pass-rate and speed changes with intervals",
        "parameters": [*UUID_ID,
                       {"name": "earlier_id", "in": "path", "required": True,
                        "schema": {"type": "string", "format": "uuid"},
                        "description": "Another run of the same suite, yours"},
                       {"name": "pair", "in": "query", "required": False, "style": "form", "explode": True,
                        "schema": {"type": "array", "maxItems": comparing.MAX_PAIR_VALUES,
                                   "items": {"type": "string", "pattern": "^[^:]+:[^:]*$"}},
                        "description": "<contestant of this run>:<contestant of the earlier run> (or "
                                       "<contestant>: for none), repeated; a contestant not named is compared with "
                                       "the same catalogue entry"}],
        "responses": {
            "200": {"description": "The comparison", **json_content(COMPARISON)},
            "400": error_response("Not two runs of one suite, the same run twice, or a pair that names no "
                                  "contestant of its run"),
            "401": error_response("Missing or invalid token"),
            "404": error_response("No such suite run (either of them, or not yours)"),
        },
    },
}
