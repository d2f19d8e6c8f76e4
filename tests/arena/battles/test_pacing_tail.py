"""Blind to the last word (arena/battles/pacing.py), on a fake clock: one pace from the first
piece to the last, the same before and after the shorter answer ends, chosen before the first
piece from the slower side's measured rate; never a piece before it exists, and what a viewer
sees at a moment never changes once later events come."""

import statistics
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st
from pytest import approx

from arena.battles.pacing import MARGIN, PROBE, Pacer
from inference import protocol as p

GAP = 0.05  # at most 20 pieces a second


def schedule(start: float, intervals: list[float]) -> list[float]:
    """When each word arrives: `intervals[i]` after the previous one (after `start` for the first)."""
    times, t = [], start
    for dt in intervals:
        t += dt
        times.append(t)
    return times


def side_events(side: int, start: float, times: list[float], end_after: float = 0.01, end: str = p.DONE):
    """(time, side, event): a start, one word per time, then its end."""
    words = [f" s{side}w{i}" for i in range(len(times))]
    events = [(start, side, {"type": p.STARTED})]
    events += [(t, side, {"type": p.TOKEN, "text": w}) for t, w in zip(times, words, strict=True)]
    ended = (times[-1] if times else start) + end_after
    text = "".join(words)
    if end == p.FAILED:
        events.append((ended, side, {"type": p.FAILED, "reason": "worker died"}))
    else:
        events.append((ended, side, {"type": end, "text": text, "finish_reason": "stop", "metrics": {}}))
    return events


def paced(events, until: float | None = None) -> Pacer:
    """A pacer fed the events (in time order, each side's in its own order) up to `until`."""
    pacer = Pacer(words_per_s=1 / GAP)
    for t, side, ev in sorted(events, key=lambda e: e[0]):
        if until is None or t <= until:
            pacer.add(side, t, ev)
    return pacer


def jittered(n: int, mean: float) -> list[float]:
    """n intervals around `mean`, unevenly (a token of two words, then a pause), the same each run."""
    pattern = (0.6, 1.4, 1.0, 0.8, 1.2)
    return [mean * pattern[i % len(pattern)] for i in range(n)]


def phases(pacer: Pacer, short: int) -> tuple[list[float], list[float]]:
    """The release gaps while both sides have pieces, and after the shorter one's last."""
    pacer.view(1e9)
    return ([b - a for a, b in pairwise(pacer.release[:short])],
            [b - a for a, b in pairwise(pacer.release[short - 1:])])


def never_before_written(pacer: Pacer) -> bool:
    return all(side.complete_at[k] <= pacer.release[k] + 1e-9
               for side in pacer.sides for k in range(len(side.complete_at)))


def test_a_fast_long_answer_goes_on_after_a_slow_short_one_at_the_same_pace():
    fast = side_events(0, 0.0, schedule(0.3, jittered(200, 0.02)))  # 5x faster, 200 pieces
    slow = side_events(1, 0.0, schedule(0.8, jittered(20, 0.1)))    # 20 pieces
    pacer = paced(fast + slow)
    joint, tail = phases(pacer, 20)
    assert statistics.median(tail) == approx(statistics.median(joint), rel=0.1)
    assert max(joint + tail) == approx(min(joint + tail))  # one gap, first piece to last
    assert pacer.pace == approx(0.1 / MARGIN, rel=0.15)  # the slow side's measured pace, a margin in hand
    assert never_before_written(pacer)
    assert len(pacer.release) == 200 and pacer.finished(pacer.release[-1] + 0.02)


def test_a_slow_long_answer_goes_on_after_a_fast_short_one_at_the_same_pace():
    """The case that gave the slow model away: alone, the longer side showed its own speed."""
    fast = side_events(0, 0.0, schedule(0.3, jittered(20, 0.02)))
    slow = side_events(1, 0.0, schedule(0.8, jittered(200, 0.1)))
    pacer = paced(fast + slow)
    joint, tail = phases(pacer, 20)
    assert statistics.median(tail) == approx(statistics.median(joint), rel=0.1)
    assert max(joint + tail) == approx(min(joint + tail))
    assert never_before_written(pacer)
    last_written = pacer.sides[1].complete_at[-1]
    assert pacer.release[-1] - last_written < 0.5 * (last_written - 0.8)  # the margin, not a long wait


def test_a_side_slowed_by_the_machine_holds_the_release_and_then_goes_on_at_the_same_pace():
    """Load arrives mid-answer: the slow side halves its speed after 60 pieces. The release
    never outruns it; it holds until a second of the pace is written ahead, then resumes at
    the pace it began with: no stretch of the delivery runs at the side's own new speed."""
    fast = side_events(0, 0.0, schedule(0.3, jittered(150, 0.02)))
    slow_times = schedule(0.8, jittered(60, 0.1) + jittered(90, 0.2))
    pacer = paced(fast + side_events(1, 0.0, slow_times))
    pacer.view(1e9)
    gaps = [b - a for a, b in pairwise(pacer.release)]
    at_pace = [g for g in gaps if g == approx(pacer.pace)]
    holds = [g for g in gaps if g != approx(pacer.pace)]
    assert never_before_written(pacer)
    assert all(g > pacer.pace for g in holds)
    assert len(at_pace) > 3 * len(holds) and statistics.median(gaps) == approx(pacer.pace)
    assert not any(abs(g - 0.2) < 0.03 for g in gaps)  # never the slowed side's own gap


def test_the_release_begins_once_the_slower_side_is_measured():
    fast = side_events(0, 0.0, schedule(0.3, jittered(50, 0.02)))
    slow_times = schedule(0.8, jittered(50, 0.1))
    pacer = paced(fast + side_events(1, 0.0, slow_times))
    pacer.view(1e9)
    assert pacer.began_at == slow_times[PROBE]  # its PROBE-th piece is complete when the next word comes
    early = paced(fast + side_events(1, 0.0, slow_times), until=slow_times[PROBE] - 0.001)
    assert [v.text for v in early.view(slow_times[PROBE] - 0.001)] == ["", ""]  # nothing out before
    assert early.next_change(slow_times[PROBE] - 0.001) is None


def test_a_cancelled_side_ends_with_what_was_out_and_the_other_keeps_the_pace():
    fast = side_events(0, 0.0, schedule(0.3, jittered(100, 0.02)))
    slow = side_events(1, 0.0, schedule(0.8, jittered(100, 0.1))[:40], end=p.CANCELLED)
    pacer = paced(fast + slow)
    cancelled_at = slow[-1][0]
    pacer.view(1e9)  # fixes the whole schedule
    out_then = sum(1 for t in pacer.release if t <= cancelled_at)
    assert 0 < out_then < 40
    views = pacer.view(cancelled_at + 0.001)
    assert views[1].state == "cancelled" and views[0].state == "running"
    assert views[1].text == "".join(f" s1w{i}" for i in range(out_then))
    assert pacer.view(1e9)[1].text == views[1].text  # nothing more shows on the cancelled side
    gaps = [b - a for a, b in pairwise(pacer.release)]
    assert max(gaps) == approx(min(gaps)) == approx(pacer.pace)


def test_two_fast_sides_keep_the_fixed_pace():
    pacer = paced(side_events(0, 0.0, schedule(0.1, jittered(30, 0.004)))
                  + side_events(1, 0.0, schedule(0.2, jittered(80, 0.01))))
    pacer.view(1e9)
    assert pacer.pace == GAP
    assert all(b - a == approx(GAP) for a, b in pairwise(pacer.release))


interval = st.one_of(st.just(0.0), st.floats(0.001, 0.4))  # 0: a burst of speculative tokens
a_side = st.tuples(st.floats(0.0, 2.0), st.lists(interval, max_size=25), st.floats(0.0, 0.4),
                   st.sampled_from([p.DONE, p.DONE, p.CANCELLED, p.FAILED]))


@settings(max_examples=150, deadline=None)
@given(a_side, a_side)
def test_any_arrival_schedule_gives_one_pace_shared_instants_and_nothing_before_it_exists(left, right):
    events = []
    for side, (start, intervals, end_after, end) in enumerate((left, right)):
        events += side_events(side, start, schedule(start, intervals), end_after, end)
    pacer = paced(events)
    final = pacer.view(1e9)
    release = pacer.release
    assert all(v.ended for v in final)
    # Monotone, and never faster than the one pace (a gap longer than it is a hold: a side fell behind).
    assert pacer.pace is None or pacer.pace >= GAP
    assert all(b - a >= pacer.pace - 1e-9 for a, b in pairwise(release))
    assert never_before_written(pacer)
    # Both sides grow in the same instants: piece k of each side that has one shows at release[k].
    for k, t in enumerate(release):
        for side, view in zip(pacer.sides, pacer.view(t), strict=True):
            if k < len(side.piece_ends) and not side.cancelled:
                assert view.text == side.text[:side.piece_ends[k]]
    for side, view, (_start, _intervals, _after, end) in zip(pacer.sides, final, (left, right), strict=True):
        if end == p.DONE:
            assert view.text == side.text and view.state == "done"
    # What anyone saw at a moment stays what was shown then: later events change nothing before them.
    moments = sorted({*release[:12], *(t + 0.0005 for t in release[:12]), *(t for t, _s, _e in events)})
    for t in moments[:30]:
        then = paced(events, until=t).view(t)
        assert [(v.text, v.state) for v in then] == [(v.text, v.state) for v in pacer.view(t)]
