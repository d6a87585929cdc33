"""The ramp governor on a fake clock: Firestore's 500/50/5 rule, paced and never exceeded."""

from __future__ import annotations

import bisect

import pytest

from firestore_outbox.errors import ConfigError
from firestore_outbox.relay.ramp import RampGovernor, RampSchedule, parse_ramp

START = 1_800_000_000.0  # epoch seconds


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("elapsed", "rate"),
    [(-60, 500), (0, 500), (299.9, 500), (300, 750), (599, 750), (600, 1125), (900, 1687.5)],
)
def test_the_schedule_is_500_then_50_percent_more_every_5_minutes(
    elapsed: float, rate: float
) -> None:
    assert RampSchedule(started_at=START).rate(START + elapsed) == pytest.approx(rate)


def test_a_start_long_ago_does_not_overflow() -> None:
    assert RampSchedule(started_at=0.0).rate(START) < float("inf")


def drain(governor: RampGovernor, clock: FakeClock, until: float, batch: int) -> list[float]:
    """A greedy caller: books `batch` operations, sleeps what it is told, sends them.
    Returns the fake time each operation was sent."""
    sent: list[float] = []
    while clock.now < until:
        clock.now += governor.reserve(batch)
        sent.extend([clock.now] * batch)
    return sent


def in_window(sent: list[float], start: float, end: float) -> int:
    return bisect.bisect_left(sent, end) - bisect.bisect_left(sent, start)


@pytest.mark.parametrize("batch", [10, 500, 2000])
def test_a_greedy_drain_follows_the_rule_step_by_step(batch: int) -> None:
    clock = FakeClock(START)
    governor = RampGovernor(RampSchedule(started_at=START), clock=clock)
    sent = drain(governor, clock, START + 900, batch)
    for step, rate in enumerate([500, 750, 1125]):
        begin = START + 300 * step
        done = in_window(sent, begin, begin + 300)
        # Never above the rule (one booking may straddle a window's edge), and not far below.
        assert done <= rate * 300 + batch
        assert done >= rate * 300 * 0.98 - batch
    # No second anywhere holds more than the rule plus one second's burst.
    for second in range(900):
        allowed = RampSchedule(started_at=START).rate(START + second)
        assert in_window(sent, START + second, START + second + 1) <= 2 * allowed + batch


def test_a_share_paces_one_invocation_of_several() -> None:
    clock = FakeClock(START)
    governor = RampGovernor(RampSchedule(started_at=START), share=0.25, clock=clock)
    sent = drain(governor, clock, START + 100, 10)
    assert governor.rate() == pytest.approx(125)
    assert in_window(sent, START, START + 100) == pytest.approx(12_500, abs=20)


def test_idle_time_buys_at_most_one_burst() -> None:
    clock = FakeClock(START)
    governor = RampGovernor(RampSchedule(started_at=START), clock=clock, burst_seconds=1.0)
    clock.now += 120  # idle for two minutes
    assert governor.reserve(500) == 0.0  # one second's worth at once
    assert governor.reserve(250) == pytest.approx(0.5)  # and then the rate again


def test_a_fresh_governor_starts_without_a_burst() -> None:
    clock = FakeClock(START + 1000)
    governor = RampGovernor(RampSchedule(started_at=START), clock=clock)
    assert governor.rate() == pytest.approx(1687.5)  # three steps in
    assert governor.reserve(1687) == pytest.approx(1.0, rel=1e-3)


def test_a_clock_stepping_back_never_refunds_operations() -> None:
    clock = FakeClock(START + 10)
    governor = RampGovernor(RampSchedule(started_at=START), clock=clock)
    governor.reserve(500)
    clock.now -= 5
    assert governor.reserve(500) == pytest.approx(2.0)  # no refill backwards


@pytest.mark.parametrize(
    "changes",
    [
        {"initial_rate": 0},
        {"step_seconds": -1},
        {"growth": -0.5},
        {"initial_rate": float("nan")},
        {"started_at": float("inf")},
    ],
)
def test_a_bad_schedule_is_refused(changes: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RampSchedule(**{"started_at": START, **changes})


@pytest.mark.parametrize(
    ("kwargs", "operations"),
    [({"share": 0}, 1), ({"share": 1.5}, 1), ({"burst_seconds": 0}, 1), ({}, -1), ({}, True)],
)
def test_bad_governor_arguments_are_refused(kwargs: dict[str, float], operations: int) -> None:
    with pytest.raises(ValueError):
        governor = RampGovernor(RampSchedule(started_at=START), **kwargs)  # type: ignore[arg-type]
        governor.reserve(operations)


@pytest.mark.parametrize(
    ("raw", "on"), [(None, False), ("off", False), ("ON", True), (" on ", True)]
)
def test_relay_ramp_reads_on_or_off(raw: str | None, on: bool) -> None:
    assert parse_ramp(raw) is on


def test_relay_ramp_refuses_anything_else() -> None:
    with pytest.raises(ConfigError, match="RELAY_RAMP must be on or off"):
        parse_ramp("yes")
