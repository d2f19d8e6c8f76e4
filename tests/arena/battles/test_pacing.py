"""The pacing rule of blind battles (arena/battles/pacing.py), on a fake clock: both sides
advance together at one pace chosen before the first piece (the slower one's measured pace
with a margin, never faster than the fixed pace), in pieces cut by characters; a side shows
as ended only once its paced text is out. The tail and random schedules: test_pacing_tail.py."""

import statistics
from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st
from pytest import approx

from arena.battles.pacing import MARGIN, MAX_PIECE, Pacer
from inference import protocol as p

GAP = 0.05  # 20 pieces a second


def tok(text):
    return {"type": p.TOKEN, "text": text}


def done(text):
    return {"type": p.DONE, "text": text, "finish_reason": "length", "metrics": {}}


def stream_words(pacer, side, words, start, per_word_s, end=True):
    """A side that starts at `start` and writes one word every `per_word_s`."""
    pacer.add(side, start, {"type": p.STARTED})
    t = start
    for w in words:
        t += per_word_s
        pacer.add(side, t, tok(w))
    if end:
        pacer.add(side, t + per_word_s, done("".join(words)))
    return t + per_word_s


def release_times(pacer, side, until, step=0.001):
    """When each side's shown text grew, sampled on a fine fake clock."""
    times, last, t = [], "", 0.0
    while t <= until:
        text = pacer.view(t)[side].text
        if text != last:
            times.append(t)
            last = text
        t += step
    return times


def test_a_fast_and_a_slow_side_are_released_in_the_same_instants():
    pacer = Pacer(words_per_s=1 / GAP)
    words = [f"w{i} " for i in range(40)]
    fast_end = stream_words(pacer, 0, words, 1.0, 0.01)  # 100 words/s: faster than the pace
    slow_end = stream_words(pacer, 1, words, 1.0, 0.2)   # 5 words/s
    left, right = release_times(pacer, 0, slow_end + 5), release_times(pacer, 1, slow_end + 5)
    assert left == right  # identical instants: nothing tells the sides apart
    gaps = [b - a for a, b in pairwise(left)]
    assert pacer.pace == approx(0.2 / MARGIN)  # the slower side's pace, with a margin in hand
    assert all(g == approx(pacer.pace, abs=0.0015) for g in gaps)
    assert fast_end < 2.0 < slow_end
    views = pacer.view(slow_end + 5)
    assert views[0].state == views[1].state == "done"
    assert pacer.view(fast_end + 0.01)[0].state == "running"  # the fast side does not end early


def test_both_faster_than_the_pace_get_the_fixed_pace():
    pacer = Pacer(words_per_s=1 / GAP)
    words = [f"word{i} " for i in range(30)]
    stream_words(pacer, 0, words, 0.0, 0.001)
    stream_words(pacer, 1, words, 0.0, 0.002)
    times = release_times(pacer, 0, 5.0)
    gaps = [b - a for a, b in pairwise(times)]
    assert all(abs(g - GAP) < 0.0015 for g in gaps)
    assert pacer.finished(5.0)
    assert not pacer.finished(times[-1] - 0.01)


def test_a_burst_of_speculative_tokens_is_spread_out():
    pacer = Pacer(words_per_s=1 / GAP)
    pacer.add(0, 0.0, {"type": p.STARTED})
    pacer.add(1, 0.0, {"type": p.STARTED})
    pacer.add(0, 0.5, tok("one two three four five six "))  # five accepted draft tokens at once
    for i, word in enumerate("abcdefg"):
        pacer.add(1, 0.01 * (i + 1), tok(word + " "))
    shown = [len(pacer.view(0.5 + i * GAP + 0.001)[0].text.split()) for i in range(6)]
    assert pacer.pace == GAP and shown == [1, 2, 3, 4, 5, 6]


def shown_texts(pacer, side=0, until=10.0):
    """Every distinct text a side shows, in order."""
    texts: list[str] = []
    pacer.view(until)  # fixes the schedule
    for t in [0.0, *pacer.release, until]:
        text = pacer.view(t)[side].text
        if not texts or texts[-1] != text:
            texts.append(text)
    return texts


def test_pieces_are_cut_by_characters_not_tokens():
    shown = []
    for tokens in (["Hel", "lo wor", "ld, th", "ere"], ["Hello", " world", ",", " there"]):
        pacer = Pacer(sides=1)
        pacer.add(0, 0.0, {"type": p.STARTED})
        for i, t in enumerate(tokens):
            pacer.add(0, 0.1 * (i + 1), tok(t))
        pacer.add(0, 1.0, done("".join(tokens)))
        shown.append(shown_texts(pacer))
    assert shown[0] == shown[1] == ["", "Hello", "Hello world,", "Hello world, there"]


def test_a_long_word_and_unspaced_text_come_in_bounded_pieces():
    pacer = Pacer(sides=1)
    pacer.add(0, 0.0, {"type": p.STARTED})
    pacer.add(0, 0.1, tok("一" * 40))
    pacer.add(0, 0.2, done("一" * 40))
    assert [len(t) for t in shown_texts(pacer)] == [0, MAX_PIECE, 2 * MAX_PIECE, 3 * MAX_PIECE, 40]


def test_the_longer_side_goes_on_at_the_pace_kept_together():
    pacer = Pacer(words_per_s=1 / GAP)
    stream_words(pacer, 0, [f"x{i} " for i in range(60)], 0.0, 0.001)  # fast and long
    slow_end = stream_words(pacer, 1, [f"y{i} " for i in range(20)], 0.0, 0.1)  # slow and short
    times = release_times(pacer, 0, 20.0)
    together = [b - a for a, b in pairwise(times[:20])]
    alone = [b - a for a, b in pairwise(times[20:])]
    assert abs(statistics.median(alone) - statistics.median(together)) < 0.002
    shown_done = pacer.release[19]  # the slow side's last piece: later than it was written (the margin)
    assert shown_done > slow_end
    assert pacer.view(shown_done)[1].state == "done"
    assert pacer.view(shown_done)[0].state == "running"


def test_a_side_that_fails_shows_failed_only_when_its_text_is_out():
    pacer = Pacer(words_per_s=1 / GAP)
    pacer.add(0, 0.0, {"type": p.STARTED})
    pacer.add(1, 0.0, {"type": p.STARTED})
    pacer.add(0, 0.01, tok("a b c d e f "))
    pacer.add(0, 0.02, {"type": p.FAILED, "reason": "worker died"})
    pacer.add(1, 0.01, tok("u v w x y z "))
    assert pacer.view(0.03)[0].state == "running"
    assert pacer.view(0.03 + 6 * GAP)[0].state == "failed"
    assert pacer.view(0.03 + 6 * GAP)[0].text == "a b c d e f "


def test_a_cancelled_side_keeps_only_what_was_out():
    pacer = Pacer(words_per_s=1 / GAP)
    for side in (0, 1):
        pacer.add(side, 0.0, {"type": p.STARTED})
        pacer.add(side, 0.01, tok(" ".join(f"w{i}" for i in range(50)) + " "))
    for side in (0, 1):
        pacer.add(side, 0.3, {"type": p.CANCELLED, "text": "x", "metrics": {}})
    views = pacer.view(10.0)
    assert [v.state for v in views] == ["cancelled", "cancelled"]
    assert views[0].text == views[1].text
    assert 4 <= len(views[0].text.split()) <= 7  # about 0.3 s of pieces at 20 a second


def test_running_is_shown_when_both_have_started_and_loading_without_a_model():
    pacer = Pacer()
    pacer.add(0, 0.0, {"type": p.LOADING, "elapsed_s": 1})
    assert [v.state for v in pacer.view(0.1)] == ["loading", "loading"]
    pacer.add(0, 1.0, {"type": p.STARTED})
    assert pacer.view(1.5)[0].state == "loading"  # the other has not started
    pacer.add(1, 2.0, {"type": p.STARTED})
    assert pacer.view(2.0)[0].state == "running"
    assert pacer.next_change(1.5) == 2.0


def test_next_change_says_when_to_look_again():
    pacer = Pacer(words_per_s=1 / GAP)
    for side in (0, 1):
        pacer.add(side, 0.0, {"type": p.STARTED})
        pacer.add(side, 0.1, tok("a b c d e f"))
    assert pacer.next_change(0.1) == approx(0.1 + GAP)
    assert pacer.next_change(0.1 + 4 * GAP) is None  # "f" may go on ("fig"): wait for events


@given(st.lists(st.text(alphabet="ab \n一", min_size=1, max_size=8), min_size=1, max_size=30),
       st.lists(st.text(alphabet="xy ", min_size=1, max_size=8), min_size=1, max_size=30),
       st.floats(0.001, 0.3), st.floats(0.001, 0.3))
def test_every_answer_comes_out_whole_and_in_shared_instants(left, right, dt_left, dt_right):
    pacer = Pacer(words_per_s=1 / GAP)
    ends = []
    for side, tokens, dt in ((0, left, dt_left), (1, right, dt_right)):
        pacer.add(side, 0.0, {"type": p.STARTED})
        for i, t in enumerate(tokens):
            pacer.add(side, dt * (i + 1), tok(t))
        ends.append(dt * (len(tokens) + 1))
        pacer.add(side, ends[-1], done("".join(tokens)))
    horizon = 1e6
    views = pacer.view(horizon)
    assert [v.text for v in views] == ["".join(left), "".join(right)]
    assert all(v.state == "done" for v in views)
    # Growth happens only at the shared release instants.
    for t in pacer.release:
        before, after = pacer.view(t - 1e-9), pacer.view(t)
        assert any(b.text != a.text for b, a in zip(before, after, strict=True)) or t == pacer.release[0]


def test_a_waiting_battle_shows_its_place_in_line_on_both_sides_and_nothing_else():
    from arena.battles.fragments import Side, paced_frame

    pacer = Pacer(words_per_s=1 / GAP)
    for side in (0, 1):  # one pass of the line writes both sides' place
        pacer.add(side, 1.0, {"type": p.QUEUED, "position": 3, "waiting": 4, "elapsed_s": 2.0})
    first = pacer.view(1.5)
    assert [(v.state, v.place) for v in first] == [("queued", (3, 4))] * 2
    sides = [Side("left", 0.0, blind=True), Side("right", 0.0, blind=True)]
    assert paced_frame(sides, None, first).count("3rd in line of 4") == 2
    for side in (0, 1):
        pacer.add(side, 2.0, {"type": p.QUEUED, "position": 1, "waiting": 2, "elapsed_s": 3.0})
    moved = pacer.view(2.5)
    frame = paced_frame(sides, first, moved)
    assert frame.count("1st in line of 2") == 2 and " s<" not in frame  # no seconds: nothing to time a side by
    pacer.add(0, 3.0, {"type": p.LOADING, "elapsed_s": 0.5})
    assert [v.state for v in pacer.view(3.5)] == ["loading", "loading"]


def test_a_stream_that_lost_its_beginning_shows_the_whole_answer_from_its_end():
    """Redis restarted empty mid-answer: the worker wrote on into a fresh stream, so a pacer
    rebuilt from it sees only the tail; the end event's own text is the whole answer."""
    whole = "A CPU cache is a small fast memory."
    pacer = Pacer(words_per_s=1 / GAP)
    stream_words(pacer, 0, ["A", " CPU", " cache", " is", " a", " small", " fast", " memory."], 0.0, 0.01)
    pacer.add(1, 0.5, tok(" cache is a"))  # the first event of a fresh stream: a token, no start
    pacer.add(1, 0.6, tok(" small fast memory."))
    pacer.add(1, 0.7, done(whole))
    views = pacer.view(100.0)
    assert [v.text for v in views] == [whole, whole] and [v.state for v in views] == ["done", "done"]


def test_a_paced_frame_replaces_a_text_that_does_not_extend_what_was_shown():
    from arena.battles.fragments import Side, paced_frame
    from arena.battles.pacing import SideView

    sides = [Side("left", 0.0, blind=True), Side("right", 0.0, blind=True)]
    before = [SideView(" cache is", "running"), SideView("B", "running")]
    now = [SideView("A CPU cache", "running"), SideView("B c", "running")]
    frame = paced_frame(sides, before, now)
    assert 'id="left-output" class="output">A CPU cache<' in frame  # replaced whole
    assert 'hx-swap-oob="beforeend"' in frame and "> c<" in frame  # the other side appended as usual
