"""`ServerClock`: "now" on Firestore's clock, never on the relay's.

Leases, due times and expiry are server timestamps, so comparing them with the relay's wall
clock lets a relay whose clock runs fast take back live leases (and one that runs slow sit on
abandoned ones). Every answer Firestore gives carries its own time: a query's read time, a
write's commit time. That time was taken between the moment the request left and the moment
the answer arrived, so on the relay's monotonic clock (which has no wall-clock skew) it
bounds Firestore's "now" from both sides:

    earliest() = max over answers (server time - monotonic when the answer arrived) + monotonic()
    latest()   = min over answers (server time - monotonic when the request left) + monotonic()

The relay asks "has this moment passed?" (a lease expired, an event due) with `earliest()`,
so it never acts early, and computes moments to write (a retry's `nextAttemptAt`, `expireAt`)
from `latest()`, so it never schedules early. The two differ by at most one round trip.
"""

from __future__ import annotations

import datetime
import threading
import time


class ClockNotSet(RuntimeError):
    """The clock was read before Firestore had answered anything."""


class ServerClock:
    """Firestore's current time, bounded from its answers; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # Server time at monotonic() == 0, as bounded so far.
        self._low: datetime.datetime | None = None
        self._high: datetime.datetime | None = None

    def observe(self, server_time: datetime.datetime | None, sent_at: float | None = None) -> None:
        """Record a time Firestore just reported (a read or commit time); `sent_at` is the
        monotonic time its request left, when known."""
        if server_time is None:
            return
        low = server_time - datetime.timedelta(seconds=time.monotonic())
        high = None if sent_at is None else server_time - datetime.timedelta(seconds=sent_at)
        with self._lock:
            if self._low is None or low > self._low:
                self._low = low
            if high is not None and (self._high is None or high < self._high):
                self._high = high

    def earliest(self) -> datetime.datetime:
        """Firestore's time now, or a little before (at most one round trip)."""
        with self._lock:
            offset = self._low
        if offset is None:
            raise ClockNotSet("no Firestore time observed yet: run a query first")
        return offset + datetime.timedelta(seconds=time.monotonic())

    def latest(self) -> datetime.datetime:
        """Firestore's time now, or a little after (at most one round trip)."""
        with self._lock:
            offset = self._high
        if offset is None:
            return self.earliest()  # only listener times seen: no upper bound yet
        return max(offset + datetime.timedelta(seconds=time.monotonic()), self.earliest())
