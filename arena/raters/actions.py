"""Every write on rater links: make one (the run's owner), revoke it, a rater's verdict through
it, a rater saying they are done. A link's verdicts go through the suite run's own
`record_human_verdict` (attributed to the link); the link's names are "revealed" (its verdicts
count on the leaderboard, the owner's pages may name them) once the link has ended: done,
capped, revoked or expired. The rater never sees a name."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Max

from arena.battles.models import Battle
from arena.battles.voting import Note
from arena.history.models import HINT_CHARS, digest, new_token
from arena.leaderboard.cache import bump_now_and_on_commit
from arena.suite_runs.actions import record_human_verdict
from arena.suite_runs.models import RaterVerdict, SuiteRun

from . import queue
from .models import ACTIVE, MAX_CAP, MAX_LINKS, NAME_MAX, RaterLink

MAX_DAYS = 365  # the latest expiry a link may have, from its making
RATE_PER_MINUTE = 20  # a link's verdicts in any 60 seconds at most (a person reads two answers each time)


class RaterError(Exception):
    """A link that cannot be made, or a verdict it cannot give; the message is fit for the user.
    `field`: what is wrong (name, expires_at, cap, run); `status`: the page's answer."""

    def __init__(self, message: str, field: str = "", status: int = 400):
        super().__init__(message)
        self.field, self.status = field, status


@transaction.atomic
def create_link(run: SuiteRun, *, name: str, expires_at: datetime, cap: int, now: datetime) -> tuple[RaterLink, str]:
    """A new link to rate `run`'s pairs, and its token (shown once: only its digest is kept)."""
    name = " ".join((name or "").split())
    if run.judge_id is not None:
        raise RaterError("A run with a model judge is judged by it: rater links are for runs that people judge.",
                         "run")
    if not name or len(name) > NAME_MAX:
        raise RaterError(f"Name the link (1 to {NAME_MAX} characters), e.g. “Support lead”.", "name")
    if not 1 <= cap <= MAX_CAP:
        raise RaterError(f"The cap is 1 to {MAX_CAP} verdicts.", "cap")
    if not now < expires_at <= now + timedelta(days=MAX_DAYS):
        raise RaterError(f"The link must expire in the future, and within {MAX_DAYS} days.", "expires_at")
    SuiteRun.objects.select_for_update().filter(id=run.id).first()  # one position each, two tabs at once
    links = RaterLink.objects.filter(run=run)
    if links.count() >= MAX_LINKS:
        raise RaterError(f"A run has at most {MAX_LINKS} rater links.", "run")
    position = (links.aggregate(last=Max("position"))["last"] + 1) if links.exists() else 0
    token = new_token()
    link = RaterLink.objects.create(run=run, name=name, digest=digest(token), hint=token[:HINT_CHARS],
                                    position=position, seed=RaterLink.new_seed(), expires_at=expires_at, cap=cap,
                                    created_at=now)
    return link, token


def given(link: RaterLink) -> int:
    return RaterVerdict.objects.filter(rater=link).count()


def state(link: RaterLink, now: datetime) -> str:
    return link.state(now, given(link))


@transaction.atomic
def revoke(link: RaterLink, now: datetime) -> None:
    """The link opens nothing any more (its page answers 410); its verdicts stay, now revealed."""
    if link.revoked_at is None:
        RaterLink.objects.filter(id=link.id).update(revoked_at=now)
        link.revoked_at = now
    reveal(link)


@transaction.atomic
def finish(link: RaterLink, now: datetime) -> None:
    """The rater is done (said so, or had nothing left): the link takes no more verdicts."""
    if link.finished_at is None:
        RaterLink.objects.filter(id=link.id).update(finished_at=now)
        link.finished_at = now
    reveal(link)


def reveal(link: RaterLink) -> int:
    """The link's verdicts may now be named on its owner's pages and count on the leaderboard."""
    revealed = Battle.objects.filter(rater_verdict__rater=link, revealed=False).update(revealed=True)
    if revealed:
        bump_now_and_on_commit()
    return revealed


def settle(run: SuiteRun, now: datetime) -> None:
    """Reveal the verdicts of the run's links that ended without a write (expired)."""
    for link in RaterLink.objects.filter(run=run, expires_at__lte=now,
                                         verdicts__battle__revealed=False).distinct():
        reveal(link)


@transaction.atomic
def rate(link: RaterLink, left_id: str, right_id: str, a_side: str, outcome: str, note: Note | None,
         now: datetime):
    """A verdict through the link on a pair it was shown (`a_side`: which side the page labelled
    A, as its queue shows that pair); RaterError: ended (410), too fast (429), not its pair."""
    link = RaterLink.objects.select_for_update().get(id=link.id)
    count = given(link)
    if (why := link.state(now, count)) != ACTIVE:
        raise RaterError(f"This link takes no more verdicts ({why}).", "link", 410 if why in ("revoked", "expired")
                         else 409)
    if queue.a_side((str(left_id), str(right_id)), link.position) != a_side:
        raise RaterError("That pair was not shown by this page.", "token")
    recent = RaterVerdict.objects.filter(rater=link, created_at__gt=now - timedelta(seconds=60)).count()
    if recent >= RATE_PER_MINUTE:
        raise RaterError(f"At most {RATE_PER_MINUTE} verdicts a minute: take a moment before the next.", "link", 429)
    battle = record_human_verdict(link.run, link.run.owner, left_id, right_id, outcome, note, rater=link, now=now)
    if count + 1 >= link.cap:
        reveal(link)
    elif not link.run.live and not left_for(link)[1]:
        finish(link, now)  # nothing left to judge: the rater is done
    return battle


def left_for(link: RaterLink) -> tuple[dict, list]:
    """The run's pairs ready now, by (left id, right id), and the link's queue of those it has
    not judged, in its order, each with its A side (arena.raters.queue)."""
    pairs = {(str(p.left.id), str(p.right.id)): p for p in link.run.people_pairs()}
    judged = {(str(left), str(right)) for left, right in
              RaterVerdict.objects.filter(rater=link).values_list("battle__left_id", "battle__right_id")}
    return pairs, queue.queue(list(pairs), judged, link.position, link.seed)
