import pytest

from arena.accounts import throttle


class Clock:
    """The login throttle's clock (arena/accounts/throttle.py's CLOCK), moved by the test."""

    def __init__(self, now: float = 1_900_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(throttle, "CLOCK", fake)
    return fake
