"""What a run's rater links stand at: each link's verdicts, state and expiry, and how far the
raters agree (arena.raters.agreement). One reading for the run page's "Raters by link" section
(templatetags/rater_tags.py) and the API (GET /api/v1/suite-runs/<id>/raters)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from arena.suite_runs.models import RaterVerdict, SuiteRun

from . import actions
from .agreement import FLOOR, Agreement, agreement
from .models import RaterLink


@dataclass(frozen=True)
class LinkRow:
    link: RaterLink
    given: int  # verdicts through it so far
    state: str  # models.ACTIVE, DONE, CAPPED, EXPIRED, REVOKED


@dataclass(frozen=True)
class Overview:
    rows: list[LinkRow]
    agreement: Agreement | None  # None: fewer than two raters gave verdicts


def overview(run: SuiteRun, now: datetime) -> Overview:
    """The run's links in their order (expired links' verdicts revealed first: actions.settle)."""
    actions.settle(run, now)
    ratings: dict[int, dict] = {}
    for link_id, left, right, outcome in RaterVerdict.objects.filter(run=run).values_list(
            "rater_id", "battle__left_id", "battle__right_id", "battle__outcome"):
        ratings.setdefault(link_id, {})[(str(left), str(right))] = outcome
    rows = []
    for link in RaterLink.objects.filter(run=run):
        given = len(ratings.get(link.id, {}))
        rows.append(LinkRow(link, given, link.state(now, given)))
    return Overview(rows, agreement(ratings, seed=run.seed))


def overview_json(seen: Overview) -> dict:
    """Never a link's token (only its digest is kept) nor its hint: the names, counts and states."""
    kappa = seen.agreement
    return {
        "links": [{"id": row.link.id, "name": row.link.name, "verdicts": row.given, "cap": row.link.cap,
                   "state": row.state, "created_at": row.link.created_at.isoformat(),
                   "expires_at": row.link.expires_at.isoformat()} for row in seen.rows],
        "agreement": None if kappa is None else {
            "method": kappa.method, "raters": kappa.raters, "shared_pairs": kappa.shared, "kappa": kappa.kappa,
            "low": kappa.low, "high": kappa.high, "min_shared_pairs": FLOOR},
    }
