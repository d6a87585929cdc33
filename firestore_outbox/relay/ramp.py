"""The ramp governor: a large drain kept within Firestore's 500/50/5 rule.

Firestore splits a collection's key and index ranges as traffic grows, and asks for a ramp
on traffic it has not seen yet: at most 500 operations per second at first, then 50% more
every 5 minutes (https://firebase.google.com/docs/firestore/best-practices#ramping_up_traffic).
A relay draining a large backlog with many invocations could otherwise start at thousands of
writes per second and meet contention errors and hotspot latency instead of throughput.

Two pieces, neither of which sleeps or does I/O:

- `RampSchedule`: the rule itself, a frozen value. `rate(now)` is the operations per second
  allowed at `now` for a ramp that began at `started_at` (epoch seconds, so that every
  invocation of one drain agrees on it: pass it in the fan-out request or keep it in Firestore).
- `RampGovernor`: paces one process's share of that rate with a token bucket on an injected
  clock. `reserve(n)` books `n` operations and answers how many seconds to wait before
  sending them; the caller sleeps (or stops, when the wait would outrun its time budget).

    governor = RampGovernor(RampSchedule(started_at), share=1 / invocations)
    ...
    wait = governor.reserve(len(writes))  # before each batch of lease or settle writes
    if wait:
        time.sleep(wait)
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import Get, at_least, parse_seconds, parse_whole, read_numbers

__all__ = ["RampGovernor", "RampSchedule", "RampSettings", "bucket", "pace", "parse_ramp"]


@dataclass(frozen=True, kw_only=True)
class RampSettings:
    """`enabled` (`RELAY_RAMP`: on or off): at most `rate` operations per second at first
    (`RELAY_RAMP_RATE`), 50% more after every `step_seconds` (`RELAY_RAMP_STEP_SECONDS`)."""

    enabled: bool = False
    rate: int = 500
    step_seconds: float = 300.0

    def __post_init__(self) -> None:
        at_least("RELAY_RAMP_RATE", self.rate, 1)
        if not self.step_seconds > 0:
            raise ConfigError(
                f"RELAY_RAMP_STEP_SECONDS must be greater than 0, got {self.step_seconds}"
            )

    @classmethod
    def from_environment(cls, get: Get) -> RampSettings:
        return cls(
            enabled=parse_ramp(get("RELAY_RAMP")),
            **read_numbers(
                get,
                {
                    "rate": ("RELAY_RAMP_RATE", parse_whole),
                    "step_seconds": ("RELAY_RAMP_STEP_SECONDS", parse_seconds),
                },
            ),
        )


@dataclass(frozen=True, kw_only=True)
class RampSchedule:
    """Operations per second allowed over time: `initial_rate` from `started_at`, times
    `1 + growth` after every `step_seconds` (Firestore's rule: 500, 50%, 5 minutes)."""

    started_at: float
    initial_rate: float = 500.0
    growth: float = 0.5
    step_seconds: float = 300.0

    def __post_init__(self) -> None:
        for name in ("started_at", "initial_rate", "growth", "step_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if self.initial_rate <= 0 or self.step_seconds <= 0 or self.growth < 0:
            raise ValueError(
                "initial_rate and step_seconds must be greater than 0 and growth at least 0"
            )

    def steps(self, now: float) -> int:
        """Whole steps since the start (0 before it: a clock behind the start waits at the
        initial rate rather than going faster)."""
        return max(0, math.floor((now - self.started_at) / self.step_seconds))

    def rate(self, now: float) -> float:
        """Operations per second allowed at `now`."""
        # Capped so that a long-forgotten start cannot overflow a float; by then (8 hours
        # at 5 minutes a step) the rule no longer limits anything a relay can do.
        return self.initial_rate * (1 + self.growth) ** min(self.steps(now), 100)


class RampGovernor:
    """Paces operations to `share` of `schedule`'s rate (a token bucket holding at most
    `burst_seconds` of the rate). Thread-safe: a relay's publisher threads may share it."""

    def __init__(
        self,
        schedule: RampSchedule,
        *,
        share: float = 1.0,
        burst_seconds: float = 1.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share!r}")
        if not burst_seconds > 0:
            raise ValueError(f"burst_seconds must be greater than 0, got {burst_seconds!r}")
        self.schedule = schedule
        self.share = share
        self.burst_seconds = burst_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._updated = clock()
        # Starts empty: a fresh invocation gets no burst on top of the ones before it.
        self._tokens = 0.0

    def rate(self) -> float:
        """This governor's operations per second now."""
        return self.schedule.rate(self._clock()) * self.share

    def bucket(self) -> int:
        """The most operations one booking should carry (the bucket's size now, at least 1):
        a larger one is paced on average but sent as one burst."""
        return max(1, math.floor(self.rate() * self.burst_seconds))

    def reserve(self, operations: int = 1) -> float:
        """Book `operations` and return the seconds to wait before sending them (0: now).
        Bookings queue: each one waits behind those booked before it, so a batch larger
        than the bucket still goes, just later."""
        if isinstance(operations, bool) or not isinstance(operations, int) or operations < 0:
            raise ValueError(f"operations must be a whole number >= 0, got {operations!r}")
        with self._lock:
            now = self._clock()
            # Refilled at the rate of the last update: never above the rule at a step.
            rate = self.schedule.rate(self._updated) * self.share
            elapsed = max(0.0, now - self._updated)
            self._tokens = min(self._tokens + elapsed * rate, rate * self.burst_seconds)
            self._updated = max(now, self._updated)
            self._tokens -= operations
            if self._tokens >= 0:
                return 0.0
            return -self._tokens / self.schedule.rate(now) / self.share


def bucket(governor: RampGovernor | None, limit: int) -> int:
    """`limit`, or less with a governor: at most its bucket."""
    return limit if governor is None else max(1, min(limit, governor.bucket()))


def pace(governor: RampGovernor | None, operations: int, deadline: float) -> None:
    """Book `operations` with `governor` (None: no ramp) and sleep until they may go, but
    never past `deadline` (monotonic): a run out of budget stops rather than waits."""
    if governor is None or not operations:
        return
    wait = governor.reserve(operations)
    if wait > 0:
        time.sleep(max(0.0, min(wait, deadline - time.monotonic())))


def parse_ramp(raw: str | None) -> bool:
    """`RELAY_RAMP`: `on` or `off` (default), any case."""
    value = (raw or "off").strip().lower()
    if value not in ("on", "off"):
        raise ConfigError(f"RELAY_RAMP must be on or off, got {raw!r}")
    return value == "on"
