"""Testing a catalogue entry: start it, send one short prompt, report TTFT and tokens/s or the error.

Used by the Test button of an entry's admin page and POST /api/v1/catalogue/{slug}/test. An
openai or server entry is checked first (key, endpoint, model listed: arena/catalogue/checks.py,
recorded on the entry); the probe is an ordinary generation of the staff user who asked (tagged
`catalogue-test`, so it shows in their history), so it goes through the orchestrator exactly as a
user's request would.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from functools import partial

from arena.catalogue.models import ModelEntry
from arena.generations import runs
from arena.generations.models import Generation
from arena.generations.services import GenerationRequest, start_generation

PROBE_PROMPT = "Say hello in five words."
PROBE_PARAMS = {"temperature": 0.0, "max_new_tokens": 16}
PROBE_TAG = "catalogue-test"
POLL_S = 0.25
CHECK_FAILED = "check failed"  # a ProbeResult's status when the check before the probe failed


@dataclass(frozen=True)
class ProbeResult:
    slug: str
    status: str  # the generation's: done, failed, cancelled, or still running when the wait ran out
    generation_id: str
    ok: bool
    time_to_first_token_s: float | None = None
    tokens_per_s: float | None = None
    load_wait_s: float | None = None
    text: str = ""
    error: str = ""

    @property
    def ended(self) -> bool:
        """False when the wait ran out first (the generation goes on)."""
        return self.status in Generation.FINISHED or self.status == CHECK_FAILED

    def as_json(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        if self.ok:
            rate = f"{self.tokens_per_s:.1f} tokens/s" if self.tokens_per_s else "tokens/s not measured"
            ttft = f"{self.time_to_first_token_s:.2f} s" if self.time_to_first_token_s is not None else "?"
            return f"{self.slug}: answered in {ttft} to the first token, {rate}: {self.text!r}"
        return f"{self.slug}: {self.error}"


def run_test(entry: ModelEntry, user, timeout_s: float = 120.0) -> ProbeResult:
    """An openai or server entry's check (recorded on it), then, if it passed, the probe."""
    if entry.is_checked and (problem := entry.recheck()):
        return ProbeResult(slug=entry.slug, status=CHECK_FAILED, generation_id="", ok=False, error=problem)
    return probe(entry, user, timeout_s)


def probe(entry: ModelEntry, user, timeout_s: float = 120.0) -> ProbeResult:
    """Start a short generation on `entry` and wait up to `timeout_s` for it to end."""
    request = GenerationRequest(model=entry, prompt=PROBE_PROMPT, tag=PROBE_TAG,
                                params=entry.params_with_defaults(PROBE_PARAMS).to_dict())
    gen = start_generation(user, request, origin=Generation.Origin.API, kind=runs.PROBE)
    deadline = time.monotonic() + timeout_s
    while gen.status not in Generation.FINISHED and time.monotonic() < deadline:
        time.sleep(POLL_S)
        gen.refresh_from_db()
    return _result(entry, gen)


def _result(entry: ModelEntry, gen: Generation) -> ProbeResult:
    result = partial(ProbeResult, slug=entry.slug, status=gen.status, generation_id=str(gen.id))
    if gen.status == Generation.Status.DONE:
        return result(ok=True, time_to_first_token_s=gen.time_to_first_token_s,
                           tokens_per_s=gen.tokens_per_s, load_wait_s=gen.load_wait_s, text=gen.text)
    if gen.status in Generation.FINISHED:
        # Only staff test entries (the admin's action, the staff API): they get the full log line.
        detail = (gen.metrics or {}).get("failure_detail") or gen.failure_reason
        return result(ok=False, text=gen.text, error=detail or f"The probe {gen.status}.")
    return result(ok=False, error="No answer yet: the model may still be starting. Follow the "
                                                 f"generation at /api/v1/generations/{gen.id}.")
