"""The Pareto front and the quality charts built from (entry, rating, tokens/s, memory) points."""

from arena.leaderboard.charts import scale, ticks
from arena.leaderboard.frontier import Point, charts, pareto_front


def test_the_front_holds_the_points_no_other_beats_on_both():
    points = [("fast", 900, 60), ("good", 1100, 10), ("both", 1050, 40), ("beaten", 1000, 30), ("slowest", 800, 5)]
    assert pareto_front(points) == {"fast", "good", "both"}
    assert pareto_front([]) == set() and pareto_front([("only", 1, 1)]) == {"only"}


def test_ties_stay_on_the_front_and_equal_on_one_axis_better_on_the_other_beats():
    assert pareto_front([("a", 1000, 20), ("b", 1000, 20)]) == {"a", "b"}  # equal: neither beats the other
    assert pareto_front([("a", 1000, 20), ("b", 1000, 30)]) == {"b"}  # same rating, faster
    assert pareto_front([("a", 1000, 20), ("b", 1010, 20)]) == {"b"}  # same speed, better rated
    # Memory is lower-better: pass its negative.
    assert pareto_front([("small", 950, -100), ("big", 1000, -900), ("bigger", 990, -1000)]) == {"small", "big"}


def test_charts_plot_each_measure_and_mark_the_front():
    points = [Point("Fast", 900.0, 60.0, 200.0, True), Point("Good", 1100.0, 10.0, 900.0),
              Point("Beaten", 1000.0, 5.0, 1000.0), Point("Endpoint", 1050.0, 30.0, None),
              Point("Never ran", 950.0, None, 300.0)]
    speed, memory = charts(points)
    assert speed["key"] == "speed" and memory["key"] == "memory"
    on_front = {chart["key"]: {d["name"] for d in chart["dots"] if d["front"]} for chart in (speed, memory)}
    assert on_front == {"speed": {"Fast", "Good", "Endpoint"}, "memory": {"Fast", "Good", "Never ran"}}
    assert {d["name"] for d in speed["dots"]} == {"Fast", "Good", "Beaten", "Endpoint"}
    assert {d["name"]: d["estimate"] for d in memory["dots"]} == {"Fast": False, "Good": True, "Beaten": True,
                                                                  "Never ran": True}
    assert [d["number"] for d in speed["dots"]] == [1, 2, 3, 5]  # by rating, as in the memory chart: 4 never ran
    assert [d["name"] for d in speed["dots"]] == ["Good", "Endpoint", "Beaten", "Fast"]
    dots = {d["name"]: d for d in speed["dots"]}
    assert dots["Fast"]["cx"] > dots["Endpoint"]["cx"] > dots["Good"]["cx"]  # faster: further right
    assert dots["Good"]["cy"] < dots["Fast"]["cy"]  # better rated: higher up (SVG's y grows down)
    assert charts([Point("Alone", 1000.0, None, None)]) == []


def test_time_to_first_token_is_a_chart_of_its_own_lower_better():
    points = [Point("Quick", 900.0, 10.0, None, first_token_s=0.2), Point("Never", 1000.0, 10.0, None),
              Point("Slow", 1100.0, 10.0, None, first_token_s=2.5),
              Point("Beaten", 890.0, 10.0, None, first_token_s=0.9)]
    _speed, first_token = charts(points)
    assert first_token["key"] == "first-token" and first_token["x_label"] == "Time to first token (s, median)"
    assert {d["name"]: d["front"] for d in first_token["dots"]} == {"Quick": True, "Slow": True, "Beaten": False}


def test_the_shared_scale_and_ticks():
    to_x = scale(0, 10, 100, 200)
    assert (to_x(0), to_x(5), to_x(10)) == (100, 150, 200)
    assert scale(0, 10, 200, 100)(10) == 100  # flipped: an upward y axis
    assert ticks(0, 37) == [0, 10, 20, 30] and ticks(905.3, 1102) == [950, 1000, 1050, 1100]
