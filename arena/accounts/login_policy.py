"""Whether a login attempt may go ahead, from the failures counted so far. Pure: no Django, no
Redis, no clock (times come in as arguments), so the rule is tested on plain values
(arena/accounts/throttle.py reads and records the failures).

Three counts, each of the failures within the last `window_s` seconds:

- the pair: this username from this client. A client is its address, or, for a browser that has
  logged in to this account before (a signed "trusted browser" cookie), that browser. The first
  `free_failures` cost nothing; after each further one the pair waits 1, 2, 4 … seconds (capped
  at `max_delay_s`) before its next try. A refused try is not a failure: it restarts nothing.
- the address: failures from one address at any usernames, at most `address_limit` per window
  (one machine guessing across accounts);
- the username: failures at one username from any address, at most `username_limit` per window
  (guessing from many machines). Much higher than the pair's free failures: a stranger's few
  tries do not lock anyone out.

A trusted browser is held only by its own pair: nobody else's failures (the address's, the
username's) reach it, so an attack on a username never refuses its owner's usual browser."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PAIR, ADDRESS, USERNAME = "pair", "address", "username"


@dataclass(frozen=True)
class Policy:
    free_failures: int = 2
    max_delay_s: float = 300.0
    address_limit: int = 20
    username_limit: int = 50
    window_s: float = 900.0


@dataclass(frozen=True)
class Failures:
    """The failure times (seconds) of each count, any order."""

    pair: Sequence[float] = ()
    address: Sequence[float] = ()
    username: Sequence[float] = ()


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    retry_after_s: float = 0.0
    reason: str = ""  # PAIR, ADDRESS or USERNAME: the count that holds it longest


ALLOWED = Verdict(True)


def delay_after(failures: int, policy: Policy) -> float:
    """Seconds a pair waits after its `failures`-th failure in the window: 0 for the first
    `free_failures`, then 1, 2, 4 … capped at `max_delay_s`."""
    if failures <= policy.free_failures:
        return 0.0
    return min(2.0 ** min(failures - policy.free_failures - 1, 64), policy.max_delay_s)


def _over_limit(times: list[float], limit: int, now: float, window_s: float) -> float:
    """Seconds until fewer than `limit` of `times` are in the window (0: already fewer)."""
    if limit <= 0 or len(times) < limit:
        return 0.0
    # the (len - limit + 1)-th newest must leave the window for the count to drop below the limit
    return times[len(times) - limit] + window_s - now


def decide(failures: Failures, now: float, policy: Policy, trusted: bool) -> Verdict:
    """May this client try a password for this username now? `trusted`: the client is a browser
    that logged in to this account before (its own pair only applies)."""
    since = now - policy.window_s

    def recent(times: Sequence[float]) -> list[float]:
        return sorted(t for t in times if since < t <= now)

    waits: list[tuple[float, str]] = []
    pair = recent(failures.pair)
    if pair:
        waits.append((pair[-1] + delay_after(len(pair), policy) - now, PAIR))
    if not trusted:
        waits.append((_over_limit(recent(failures.address), policy.address_limit, now, policy.window_s), ADDRESS))
        waits.append((_over_limit(recent(failures.username), policy.username_limit, now, policy.window_s), USERNAME))
    wait, reason = max(waits, default=(0.0, ""))
    return Verdict(False, wait, reason) if wait > 0 else ALLOWED
