"""The login throttle's rule (arena/accounts/login_policy.py), on plain values."""

from hypothesis import given
from hypothesis import strategies as st

from arena.accounts.login_policy import ADDRESS, PAIR, USERNAME, Failures, Policy, decide, delay_after

POLICY = Policy()
NOW = 10_000.0
times = st.lists(st.floats(min_value=NOW - 2 * POLICY.window_s, max_value=NOW, allow_nan=False), max_size=80)


def test_the_delay_doubles_after_the_free_failures_and_is_capped():
    assert [delay_after(n, POLICY) for n in range(1, 14)] == [0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300]
    assert delay_after(10**6, POLICY) == POLICY.max_delay_s


@given(st.integers(0, 10_000))
def test_the_delay_never_shrinks_with_more_failures(n):
    assert delay_after(n, POLICY) <= delay_after(n + 1, POLICY) <= POLICY.max_delay_s


@given(times, times, times)
def test_a_trusted_browser_is_held_by_its_own_pair_only(pair, address, username):
    alone = decide(Failures(pair=pair), NOW, POLICY, trusted=True)
    assert decide(Failures(pair, address, username), NOW, POLICY, trusted=True) == alone
    assert alone.reason in ("", PAIR)


@given(times, times, times, st.booleans())
def test_waiting_the_retry_after_is_enough(pair, address, username, trusted):
    """Retry-After is the truth: at that moment (no new failure meanwhile) the try goes ahead."""
    verdict = decide(Failures(pair, address, username), NOW, POLICY, trusted)
    assert verdict.allowed == (verdict.retry_after_s == 0)
    assert 0 <= verdict.retry_after_s <= max(POLICY.max_delay_s, POLICY.window_s)
    if not verdict.allowed:
        assert decide(Failures(pair, address, username), NOW + verdict.retry_after_s, POLICY, trusted).allowed


def test_each_count_holds_at_its_own_limit():
    recent = [NOW - 10.0] * 100
    assert decide(Failures(address=recent[:19]), NOW, POLICY, False).allowed
    assert decide(Failures(address=recent[:20]), NOW, POLICY, False).reason == ADDRESS
    assert decide(Failures(username=recent[:49]), NOW, POLICY, False).allowed
    assert decide(Failures(username=recent[:50]), NOW, POLICY, False).reason == USERNAME
    held = decide(Failures(address=recent[:20]), NOW, POLICY, False)
    assert held.retry_after_s == POLICY.window_s - 10.0  # until those failures leave the window
    assert decide(Failures(pair=[NOW - POLICY.window_s - 1] * 30), NOW, POLICY, False).allowed  # lapsed
