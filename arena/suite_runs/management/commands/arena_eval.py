"""`manage.py arena_eval SUITE_FILE --models A,B`: a suite file run as a gate, for CI.

It imports the file (a suite of the owner's of the same name gets it as a new version when its
prompts or checks changed, its old version's runs kept, as any import: arena.suites.actions),
starts a run of the named catalogue entries (arena.suite_runs.actions.start_run; the app's
Celery workers and orchestrator serve it as any run), waits for it to end, prints a table (per
contestant: pass rate with its 95% Wilson interval, answers, failures), writes a JUnit XML file
(one testcase per prompt x contestant, a failure naming the failing checks with what each
expected and got) and a JSON summary, and exits:

- 0: every contestant's pass rate is at least --min-pass, every answer came, and (with
  --against) no regression against the earlier run (arena.suite_runs.comparison);
- 1: below it, an answer that never came, a regression, or a run that did not finish in time
  (it is cancelled) or was cancelled;
- 2: bad input, said in a sentence on stderr before anything runs: an unreadable or invalid
  file, a suite without checks, an unknown or disabled model, an unknown user or earlier run.
"""

from __future__ import annotations

import json
import re
import time
import uuid
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from tabulate import tabulate

from arena.access import NotFound
from arena.catalogue.models import ModelEntry
from arena.leaderboard.reliability import wilson
from arena.suite_runs import comparing, comparison, runner
from arena.suite_runs.access import access_run
from arena.suite_runs.actions import RunError, start_run
from arena.suite_runs.checking import total_time
from arena.suite_runs.models import SuiteAnswer, SuiteRun
from arena.suites import files, parsing
from arena.suites.actions import create_suite, import_version
from arena.suites.forms import SuiteForm
from arena.suites.models import Suite

PASSED, BELOW, BAD_INPUT = 0, 1, 2
DEFAULT_OWNER = "arena-ci"
POLL_S = 1.0
PROGRESS_EVERY_S = 15.0
SHOWN_REGRESSIONS = 20
# What XML 1.0 cannot hold (a model's answer may): each replaced by U+FFFD.
NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# The clock and the wait between polls: tests give their own (a wait that ends the run's
# generations as workers would).
clock = time.monotonic
sleep = time.sleep


def bad(message: str) -> CommandError:
    return CommandError(message, returncode=BAD_INPUT)


def xml_text(text: str) -> str:
    return NOT_XML.sub("\ufffd", text)


class Command(BaseCommand):
    help = ("Run a suite file against catalogue models as a gate: import it, run it, wait, print pass rates, write "
            "JUnit XML and JSON; exit 0 when every contestant passes --min-pass (and, with --against, nothing "
            "regressed), 1 when not, 2 on bad input.")

    def add_arguments(self, parser):
        parser.add_argument("suite_file", help="A suite file: .yaml/.yml, .jsonl or .csv (docs/suites.md).")
        parser.add_argument("--models", required=True,
                            help="Catalogue slugs, comma-separated, in order (a suite run takes 2 to 16).")
        parser.add_argument("--against", metavar="RUN",
                            help="An earlier run's id (of the same suite, yours): fail on any regression.")
        parser.add_argument("--pair", action="append", default=[], metavar="NEW:OLD",
                            help="With --against: compare model NEW of this run with OLD of the earlier run "
                                 "(repeatable; default: each model with itself).")
        parser.add_argument("--min-pass", type=float, default=0.9,
                            help="The pass rate every model needs, 0 to 1 (default 0.9).")
        parser.add_argument("--junit", metavar="PATH", help="Write a JUnit XML report here.")
        parser.add_argument("--json", metavar="PATH", help="Write a JSON summary here.")
        parser.add_argument("--owner", metavar="USERNAME",
                            help=f"Whose suite and run they are (default: the service account {DEFAULT_OWNER!r}, "
                                 "made without a password if needed). Name yours to see the run in the browser.")
        parser.add_argument("--timeout", type=float, default=3600, metavar="S",
                            help="Seconds to wait for the run (default 3600); then it is cancelled and the gate "
                                 "fails.")
        parser.add_argument("--temperature", type=float, default=0.0,
                            help="Sampling temperature of every answer (default 0: greedy, repeatable).")
        parser.add_argument("--max-new-tokens", type=int, default=None,
                            help="Token limit of every answer (default: the run's).")

    # --- the steps -------------------------------------------------------------------------------
    def handle(self, *args, **options):
        if not 0 <= options["min_pass"] <= 1:
            raise bad(f"--min-pass is a share from 0 to 1 (0.9 for 90%), not {options['min_pass']}.")
        if not options["timeout"] > 0:
            raise bad(f"--timeout is a number of seconds above 0, not {options['timeout']}.")
        owner = self.owner(options["owner"])
        found = self.read(Path(options["suite_file"]))
        models = self.models(options["models"])
        earlier, pairs = None, None
        with transaction.atomic():
            suite, new_version = self.import_suite(owner, found, Path(options["suite_file"]))
            if options["against"]:
                earlier = self.earlier(owner, options["against"], suite)
                pairs = self.pairs(options["pair"], models, earlier)
            elif options["pair"]:
                raise bad("--pair takes --against: it says which model of the earlier run each model stands for.")
            params = {"temperature": options["temperature"]}
            if options["max_new_tokens"] is not None:
                params["max_new_tokens"] = options["max_new_tokens"]
            try:
                run = start_run(owner, suite=suite, contestants=models, params=params)
            except RunError as exc:
                raise bad(f"The run cannot start: {exc}") from None
        self.stderr.write(f"Suite {suite.name!r} version {suite.version}{' (new)' if new_version else ''}: run "
                          f"{run.id} of {', '.join(m.slug for m in models)} started.")
        started = clock()
        finished = self.wait(run, options["timeout"])
        if not finished:
            runner.cancel(run)
        run.refresh_from_db()
        report = self.report(run, suite, new_version, options, earlier, pairs, finished, clock() - started)
        self.stdout.write(self.table(report))
        if options["junit"]:
            self.write_file(options["junit"], junit(run, suite, report))
        if options["json"]:
            self.write_file(options["json"], json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        if report["exit_code"] != PASSED:
            raise CommandError("The gate failed: " + " ".join(report["reasons"]), returncode=report["exit_code"])
        self.stderr.write("The gate passed.")

    def owner(self, username: str | None):
        users = get_user_model().objects
        if username:
            user = users.filter(username=username).first()
            if user is None:
                raise bad(f"There is no user {username!r}: name an existing user with --owner.")
            return user
        user = users.filter(username=DEFAULT_OWNER).first()
        if user is None:
            user = users.create_user(username=DEFAULT_OWNER)  # no password given: an unusable one
            self.stderr.write(f"Created the service account {DEFAULT_OWNER!r} (no password: it cannot log in).")
        return user

    def read(self, path: Path) -> parsing.SuiteFile:
        try:
            fmt = files.file_format(path.name)
            if path.stat().st_size > parsing.max_upload_bytes():
                raise bad(f"{path}: the file is larger than {parsing.max_upload_bytes()} bytes, the most a suite "
                          "file may be.")
            data = path.read_bytes()
        except OSError as exc:
            raise bad(f"Cannot read the suite file {path}: {exc.strerror or exc}.") from None
        except parsing.SuiteError as exc:
            raise bad(f"{path}: {exc}") from None
        try:
            return files.parse_data(fmt, data)
        except parsing.SuiteError as exc:
            raise bad(f"{path} is not a valid suite file: {exc}") from None

    def models(self, value: str) -> list[ModelEntry]:
        slugs = [slug.strip() for slug in value.split(",") if slug.strip()]
        if not slugs:
            raise bad("--models names no model: give catalogue slugs, comma-separated.")
        known = {m.slug: m for m in ModelEntry.objects.filter(slug__in=slugs)}
        missing = [slug for slug in slugs if slug not in known]
        if missing:
            raise bad(f"No catalogue model has the slug {', '.join(repr(s) for s in missing)} (see /catalogue/).")
        disabled = [slug for slug in slugs if not known[slug].enabled]
        if disabled:
            raise bad(f"The catalogue model {', '.join(repr(s) for s in disabled)} is disabled: enable it or "
                      "name another.")
        return [known[slug] for slug in slugs]

    def import_suite(self, owner, found: parsing.SuiteFile, path: Path) -> tuple[Suite, bool]:
        """The owner's suite of the file's name (else the file's stem) given the file as its next
        version, or a new suite; whether a new version (or suite) was made."""
        form = SuiteForm({"name": found.name or path.stem, "tag": found.tag or ""})
        if not form.is_valid():
            raise bad(f"{path}: " + "; ".join(f"{k}: {' '.join(str(e) for e in v)}" for k, v in form.errors.items()))
        name, tag = form.cleaned_data["name"], form.cleaned_data["tag"]
        if not found.default_checks and not any(p.checks for p in found.prompts):
            raise bad(f"{path} has no checks (neither 'defaults: checks' nor a prompt's 'checks'): there is nothing "
                      "to pass or fail.")
        suite = Suite.objects.filter(owner=owner, name=name).order_by("-created_at").first()
        if suite is None:
            return create_suite(owner, name=name, tag=tag, prompts=found.prompts,
                                default_checks=found.default_checks or []), True
        cleaned = parsing.SuiteFile(found.prompts, name=name, tag=None if found.tag is None else tag,
                                    default_checks=found.default_checks)
        return suite, import_version(suite, cleaned)

    def earlier(self, owner, value: str, suite: Suite) -> SuiteRun:
        try:
            run = access_run(owner, uuid.UUID(value))
        except (ValueError, NotFound):
            raise bad(f"--against {value!r}: {owner.username} has no suite run of that id.") from None
        if run.suite_id != suite.id:
            raise bad(f"--against {value}: that run is of the suite {run.suite.name!r}, not {suite.name!r}: compare "
                      "runs of one suite.")
        return run

    def pairs(self, values: list[str], models: list[ModelEntry], earlier: SuiteRun) -> list[tuple[str, str]]:
        try:
            chosen = comparing.parse_pairs(values)
            comparison.choose_pairs([m.slug for m in models], [m.slug for m in earlier.contestants], chosen)
        except (comparing.CompareError, comparison.PairError) as exc:
            raise bad(f"--pair: {exc}") from None
        return chosen

    def wait(self, run: SuiteRun, timeout_s: float) -> bool:
        """Until the run ends (True) or `timeout_s` passes (False), saying its progress on stderr."""
        started = last_said = clock()
        while True:
            run.refresh_from_db()
            if not run.live:
                return True
            now = clock()
            if now - started >= timeout_s:
                self.stderr.write(f"The run did not end within {timeout_s:g} s: cancelling it.")
                return False
            if now - last_said >= PROGRESS_EVERY_S:
                self.stderr.write(f"... {run.done} of {run.total} steps after {now - started:.0f} s")
                last_said = now
            sleep(POLL_S)

    def write_file(self, path: str, text: str) -> None:
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise bad(f"Cannot write {path}: {exc.strerror or exc}.") from None

    # --- what it says ------------------------------------------------------------------------------
    def report(self, run: SuiteRun, suite: Suite, new_version: bool, options: dict, earlier: SuiteRun | None,
               pairs: list | None, finished: bool, seconds: float) -> dict:
        answers = answers_of(run)
        rows, reasons = [], []
        for model in run.contestants:
            mine = [a for a in answers if a.contestant_id == model.id]
            checked = [a for a in mine if a.passed is not None]
            passed = sum(1 for a in checked if a.passed)
            low_high = wilson(passed, len(checked))
            no_answer = sum(a.generation.status == "failed" for a in mine)
            failing: Counter = Counter(r["name"] for a in checked for r in a.checks if not r.get("passed"))
            rate = passed / len(checked) if checked else None
            ok = bool(checked) and rate is not None and rate >= options["min_pass"] and not no_answer
            if not checked:
                reasons.append(f"{model.slug}: no answer was checked.")
            elif rate is not None and rate < options["min_pass"]:
                reasons.append(f"{model.slug} passes {passed} of {len(checked)} ({rate:.0%}), below "
                               f"{options['min_pass']:.0%}.")
            if no_answer:
                reasons.append(f"{model.slug}: {no_answer} answer{'s' if no_answer > 1 else ''} never came.")
            rows.append({"model": model.slug, "checked": len(checked), "passed": passed, "rate": rate,
                         "low": low_high[0] if low_high else None, "high": low_high[1] if low_high else None,
                         "answers": len(mine), "done": sum(a.generation.status == "done" for a in mine),
                         "no_answer": no_answer, "failed_checks": dict(failing.most_common()), "ok": ok})
        against = None
        if earlier is not None:
            found = comparing.compared(run, earlier, pairs or [])
            regressions = found.regressions
            if regressions:
                reasons.append(f"{len(regressions)} regression{'s' if len(regressions) > 1 else ''} against run "
                               f"{earlier.id}.")
            against = {"run": str(earlier.id), "suite_version": earlier.suite_version,
                       "regressions": len(regressions), "comparison": comparison.as_json(found)}
        if not finished:
            reasons.insert(0, f"The run did not end within {options['timeout']:g} s and was cancelled.")
        elif run.state == SuiteRun.State.CANCELLED:
            reasons.insert(0, "The run was cancelled before it ended.")
        return {"suite": {"id": str(suite.id), "name": suite.name, "version": run.suite_version,
                          "new_version": new_version, "file": options["suite_file"]},
                "run": {"id": str(run.id), "state": run.state, "url": run.get_absolute_url(),
                        "seconds": round(seconds, 1), "timed_out": not finished},
                "min_pass": options["min_pass"], "contestants": rows, "against": against,
                "passed": not reasons, "exit_code": PASSED if not reasons else BELOW, "reasons": reasons}

    def table(self, report: dict) -> str:
        def rate(row):
            if row["rate"] is None:
                return "—"
            return f"{row['rate']:.0%} ({row['low']:.0%}–{row['high']:.0%})"

        def failures(row):
            named = ", ".join(f"{name} ×{n}" for name, n in row["failed_checks"].items())
            gone = f"{row['no_answer']} no answer" if row["no_answer"] else ""
            return "; ".join(part for part in (named, gone) if part) or "—"

        run = report["run"]
        head = (f"Suite {report['suite']['name']!r}, version {report['suite']['version']}, run {run['id']} "
                f"({run['state']}, {run['seconds']:g} s); pass rates with their 95% Wilson interval:")
        lines = [head,
                 tabulate([[row["model"], rate(row), f"{row['checked']} checked of {row['answers']}", failures(row),
                            "ok" if row["ok"] else "FAIL"] for row in report["contestants"]],
                          headers=["Contestant", "Pass rate", "Answers", "Failures", f"≥ {report['min_pass']:.0%}"])]
        if report["against"]:
            found = report["against"]["comparison"]
            lines.append(f"Against run {report['against']['run']} (version {report['against']['suite_version']}): "
                         f"{report['against']['regressions']} regression(s) over {found['prompts']['matched']} "
                         f"matched prompts; pairs: "
                         + (", ".join(f"{p['later']} vs {p['earlier']}" for p in found["pairs"]) or "none"))
            for change in [c for c in found["changes"] if c["kind"] in comparison.REGRESSIONS][:SHOWN_REGRESSIONS]:
                failing = ", ".join(c["name"] for c in change["checks"] if c["before"] == "pass"
                                    and c["after"] == "fail")
                lines.append(f"  {change['later']} on #{change['later_position']} {change['prompt'][:60]!r}: "
                             f"{change['words']}{f' ({failing})' if failing else ''}")
        return "\n".join(lines)


def answers_of(run: SuiteRun) -> list[SuiteAnswer]:
    return sorted(SuiteAnswer.objects.filter(run=run).select_related("prompt", "generation", "contestant"),
                  key=lambda a: a.prompt.position)


def junit(run: SuiteRun, suite: Suite, report: dict) -> str:
    """The JUnit XML report: a testsuite per contestant, a testcase per prompt (skipped without
    checks, an error when no answer came, a failure naming each failing check with what it
    expected and got, and saying when it is a regression against --against's run)."""
    regressed = set()
    if report["against"]:
        regressed = {(c["later"], c["later_position"]) for c in report["against"]["comparison"]["changes"]
                     if c["kind"] in comparison.REGRESSIONS}
    root = ET.Element("testsuites", name=xml_text(f"arena_eval {suite.name}"))
    totals: Counter = Counter()
    by_model: dict[int, list[SuiteAnswer]] = {}
    for answer in answers_of(run):
        by_model.setdefault(answer.contestant_id, []).append(answer)
    for model, row in zip(run.contestants, report["contestants"], strict=True):
        counts: Counter = Counter()
        element = ET.SubElement(root, "testsuite", name=xml_text(model.slug))
        properties = ET.SubElement(element, "properties")
        for name, value in (("pass_rate", row["rate"]), ("pass_rate_low", row["low"]), ("pass_rate_high", row["high"]),
                            ("min_pass", report["min_pass"]), ("run", report["run"]["id"])):
            ET.SubElement(properties, "property", name=name, value="" if value is None else str(value))
        for answer in by_model.get(model.id, []):
            gen = answer.generation
            case = ET.SubElement(element, "testcase", classname=xml_text(f"{suite.name}.{model.slug}"),
                                 name=xml_text(f"#{answer.prompt.position}: {answer.prompt.prompt[:100]}"))
            seconds = total_time(gen.metrics or {})
            if seconds is not None:
                case.set("time", f"{seconds:.3f}")
            counts["tests"] += 1
            if gen.status == "failed":
                counts["errors"] += 1
                ET.SubElement(case, "error", type="no_answer",
                              message=xml_text(f"no answer: {gen.failure_reason or 'the generation failed'}"))
            elif answer.passed is None:
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message="no checks on this prompt" if gen.status == "done"
                              else f"not checked: the answer is {gen.status}")
            elif not answer.passed:
                counts["failures"] += 1
                failed = [r for r in answer.checks if not r.get("passed")]
                regression = (model.slug, answer.prompt.position) in regressed
                message = (f"failed {len(failed)} of {len(answer.checks)} checks: "
                           + ", ".join(r["name"] for r in failed) + (" (a regression)" if regression else ""))
                failure = ET.SubElement(case, "failure", type="regression" if regression else "checks",
                                        message=xml_text(message))
                failure.text = xml_text("\n".join(
                    f"{r['name']}: expected {r.get('expected', '')}; got {r.get('error') or r.get('got', '')}"
                    for r in failed))
            output = ET.SubElement(case, "system-out")
            output.text = xml_text(gen.text or "")
        for key in ("tests", "failures", "errors", "skipped"):
            element.set(key, str(counts[key]))
        totals.update(counts)
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(totals[key]))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
