"""The decision summary (arena.leaderboard.decision): never a single winner where the data cannot
name one, the fastest and smallest of the contenders, the separation of the top two, every caveat."""

from hypothesis import given, settings
from hypothesis import strategies as st

from arena.leaderboard import uncertainty
from arena.leaderboard.decision import Context, Entry, contenders, summarise


def entry(slug, rating, half=30.0, rank_best=None, **kw) -> Entry:
    kw.setdefault("verdicts", 50)
    return Entry(slug, slug.upper(), rating, rating - half, rating + half, rank_best or 1, 1, **kw)


def test_overlapping_intervals_name_no_single_best():
    a, b = entry("a", 1100, tokens_per_s=12.0, memory_mb=900), entry("b", 1080, tokens_per_s=60.0, memory_mb=400)
    c = entry("c", 900, rank_best=3)
    s = summarise([c, b, a], {("a", "b"): (0.55, 40), ("b", "a"): (0.45, 40)})
    assert s.contenders == ("a", "b") and s.best is None and s.margin is None
    text = " ".join(s.sentences)
    assert "2 entries cannot be told apart from the best: A and B" in text
    assert "is the best" not in text
    # The top two at 55% after 40 verdicts: a Wilson interval needs 385 in all to leave out 50%.
    assert s.separation.needed == uncertainty.verdicts_to_separate(0.55) == 385
    assert "About 345 more verdicts between A and B would separate the top two" in text
    assert s.fastest.slug == "b" and s.fastest.value == 60.0 and "Fastest of them: B, 60.0 tokens/s" in text
    assert s.smallest.slug == "b" and "Smallest of them: B, 400 MB (the catalogue's estimate)" in text
    assert "Memory of A and B is the catalogue's estimate" in text


def test_one_clear_best_is_named_with_its_margin():
    a, b = entry("a", 1200, half=20, tokens_per_s=30.0), entry("b", 1000, half=20, rank_best=2)
    s = summarise([a, b], {("a", "b"): (0.9, 60)})
    assert s.best == "a" and s.contenders == ("a",) and s.margin == 200
    assert s.sentences[0] == ("A is the best in this view: its 95% interval (1180–1220) lies above every other "
                              "entry's. It leads B by 200 rating points (160 between their intervals).")
    assert "A decodes at 30.0 tokens/s (median)." in s.sentences


def test_rank_range_including_first_makes_a_contender_even_without_overlap():
    a, b = entry("a", 1200, half=10), entry("b", 1150, half=10, rank_best=1)
    assert [e.slug for e in contenders([a, b])] == ["a", "b"]


def test_top_two_not_met_use_the_rate_their_ratings_predict():
    s = summarise([entry("a", 1010), entry("b", 1000)], {})
    assert s.met is False and "A and B have not met" in s.sentences[1]


def test_even_rate_says_no_number_would_separate():
    s = summarise([entry("a", 1010), entry("b", 1000)], {("a", "b"): (0.5, 10)})
    assert "win equally often" in s.sentences[1] and s.separation.needed is None


def test_caveats_provisional_unreliable_judge_mixed_speeds_tournaments():
    a = entry("a", 1010, provisional=True, verdicts=5, tokens_per_s=10.0, speed_mixed=True)
    b = entry("b", 1000, tokens_per_s=20.0, memory_mb=300, memory_measured=True)
    s = summarise([a, b], {}, Context(verdicts=12, tournament_verdicts=4, unreliable_judges=("Judge J",),
                                      provisional_threshold=30))
    caveats = " ".join(s.caveats)
    assert "Provisional: A is rated on fewer than 30 verdicts" in caveats
    assert "Verdicts of a judge marked unreliable are counted here: Judge J." in caveats
    assert "Speeds not measured alike: A is measured only while other answers shared the worker, the others alone" in (
        caveats)
    assert "4 of the 12 verdicts come from tournament matches" in caveats
    assert "Smallest of them: B, 300 MB (measured)." in s.sentences
    assert set(s.caveats) <= set(s.sentences)  # every caveat is said


def test_a_caveat_about_every_contender_says_so_once():
    board = [entry(f"m{i}", 1000 + i, provisional=True, memory_mb=100.0 * (i + 1)) for i in range(4)]
    caveats = summarise(board, {}, Context(provisional_threshold=30)).caveats
    assert caveats == (("Provisional: all 4 of them are rated on fewer than 30 verdicts in this view; their ratings "
                        "can still move a lot."), "No speed measured for any of them.",
                       "Memory of all 4 of them is the catalogue's estimate, not a measurement.")


def test_nothing_and_one_entry():
    assert summarise([]).sentences == ("No verdicts in this view yet: there is nothing to choose from.",)
    one = summarise([entry("a", 1000)])
    assert one.best is None and one.sentences[0].startswith("Only A is rated")
    assert summarise([entry("a", 1000)]).as_json()["best"] is None


ratings = st.floats(min_value=500, max_value=1500, allow_nan=False)
halves = st.floats(min_value=0, max_value=300, allow_nan=False)
speeds = st.none() | st.floats(min_value=0.1, max_value=500, allow_nan=False)
memories = st.none() | st.floats(min_value=1, max_value=90000, allow_nan=False)


@st.composite
def boards(draw):
    n = draw(st.integers(min_value=0, max_value=7))
    out = []
    for i in range(n):
        r, h = draw(ratings), draw(halves)
        out.append(Entry(f"m{i}", f"Model {i}", r, r - h, r + h, draw(st.integers(1, n)), n, draw(st.integers(0, 99)),
                         draw(st.booleans()), draw(speeds), draw(st.booleans()), draw(memories), draw(st.booleans())))
    return out


@settings(max_examples=300, deadline=None)
@given(boards())
def test_never_a_single_winner_where_another_could_be_best(entries):
    s = summarise(entries)
    if not entries:
        assert s.contenders == () and s.best is None
        return
    top = sorted(entries, key=lambda e: (-e.rating, e.slug))[0]
    could = {e.slug for e in entries if e is top or e.rank_best <= 1 or e.upper >= top.lower}
    assert set(s.contenders) == could and s.contenders[0] == top.slug
    text = " ".join(s.sentences)
    if len(entries) > 1 and len(could) == 1:
        assert s.best == top.slug and "is the best in this view" in text
    else:
        assert s.best is None and "is the best" not in text
    chosen = [e for e in entries if e.slug in could]
    timed = [e.tokens_per_s for e in chosen if e.tokens_per_s is not None]
    held = [e.memory_mb for e in chosen if e.memory_mb is not None]
    assert (s.fastest.value if s.fastest else None) == (max(timed) if timed else None)
    assert (s.smallest.value if s.smallest else None) == (min(held) if held else None)
    provisional = " ".join(c for c in s.caveats if c.startswith("Provisional"))
    if all(e.provisional for e in chosen) and len(chosen) > 2:
        assert f"Provisional: all {len(chosen)} of them are rated" in provisional
    else:
        assert all(e.label in provisional for e in chosen if e.provisional)
