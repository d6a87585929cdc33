"""The relay's OpenTelemetry metrics (the API only: no-ops until an SDK's meter provider is set).

Low-cardinality attributes only: the publisher (`messaging.system`), its configured
destination, an attempt's outcome, `error.type` (a short class such as `HTTP 503`) and an
event's status; never an event id, an aggregate or an error text. docs/observability.md's
"Metrics" maps the design note's names (`outbox_dispatch_attempts_total`, ...) to these. Each
delivery attempt's measurements are `firestore_outbox.observability.attempt_metrics`'s; here
are the runs', the nudges', the backlog's and the watchdog's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

from firestore_outbox.observability.attempt_metrics import (  # the relay's attempts import it here
    AttemptMetrics as AttemptMetrics,
)

_meter = metrics.get_meter("firestore-outbox")


# Counts of the relay's summary, added after each run (timer invocation or follow-mode drain).
_SUMMARY_COUNTERS = {
    "processed": ("outbox.events.processed", "Events delivered and settled PROCESSED"),
    "readRetries": ("outbox.reads.retried", "Page reads that failed and were sent again"),
    "partitionsUnread": (
        "outbox.partitions.unread",
        "Partitions released unread: their page reads kept failing",
    ),
    "retried": ("outbox.events.retried", "Failed attempts settled for a later retry"),
    "failed": ("outbox.events.failed", "Events settled FAILED (attempts spent or rejected)"),
    "poisoned": ("outbox.events.poisoned", "Events that can never be delivered as written"),
    "lostLeases": ("outbox.leases.lost", "Settles refused: another invocation took the lease"),
}
_UNITS = {"readRetries": "{read}", "partitionsUnread": "{partition}"}  # else events
_summary_counters = {
    key: _meter.create_counter(name, unit=_UNITS.get(key, "{event}"), description=text)
    for key, (name, text) in _SUMMARY_COUNTERS.items()
}


_nudges_refused = _meter.create_counter(
    "outbox.nudges.refused",
    unit="{entry}",
    description="Nudge entries refused: not a partition of this relay, or the nudge was unusable",
)


def record_nudge_refused(entries: int) -> None:
    """`entries` of one nudge refused (`firestore_outbox.nudge.message.read_nudge`)."""
    _nudges_refused.add(entries)


_channel_breaks = _meter.create_counter(
    "outbox.channel.breaks",
    unit="{run}",
    description="Runs stopped by the circuit breaker: the channel, not an event, is broken",
)


def record_run(summary: Mapping[str, Any]) -> None:
    """Add one relay run's summary counts to the counters."""
    for key, counter in _summary_counters.items():
        value = summary.get(key)
        if isinstance(value, int) and value > 0:
            counter.add(value)
    if summary.get("stoppedBy") == "channel":
        _channel_breaks.add(1, {"error.type": str(summary.get("channel") or "channel")})


class BacklogGauges:
    """Observable gauges `outbox.backlog` (events by `status`) and `outbox.oldest_due.age`
    (seconds the oldest eligible event has waited: `outbox status`'s lag), from one reading
    of `read()` per collection: it returns `(counts by status, age in seconds or None)`.

    A reading is Firestore aggregation queries: `max_age` seconds of caching keep the two
    gauges of one collection to one reading. A failed reading reports nothing (a gap in the
    series, not a zero that would clear an alert)."""

    def __init__(
        self,
        read: Callable[[], tuple[Mapping[str, int], float | None]],
        *,
        max_age: float = 5.0,
    ) -> None:
        self._read = read
        self._max_age = max_age
        self._lock = threading.Lock()
        self._reading: tuple[float, tuple[Mapping[str, int], float | None]] | None = None
        _meter.create_observable_gauge(
            "outbox.backlog",
            callbacks=[self._backlog],
            unit="{event}",
            description="Outbox events by status",
        )
        _meter.create_observable_gauge(
            "outbox.oldest_due.age",
            callbacks=[self._oldest],
            unit="s",
            description="How long the oldest eligible event has waited (0: none is due)",
        )

    def reading(self) -> tuple[Mapping[str, int], float | None] | None:
        """The latest reading, fresh within `max_age`; None if Firestore could not answer."""
        with self._lock:
            now = time.monotonic()
            if self._reading is None or now - self._reading[0] > self._max_age:
                try:
                    self._reading = (now, self._read())
                except Exception:  # reported as a gap; the relay logs Firestore's failures
                    self._reading = None
                    return None
            return self._reading[1]

    def _backlog(self, options: CallbackOptions) -> Iterable[Observation]:
        reading = self.reading()
        if reading is None:
            return []
        return [Observation(n, {"status": status}) for status, n in reading[0].items()]

    def _oldest(self, options: CallbackOptions) -> Iterable[Observation]:
        reading = self.reading()
        if reading is None:
            return []
        return [Observation(reading[1] or 0.0)]


# One series per problem: a check that found it adds 1, with `opened` "true" on the check that
# opened its incident (an alert rule on the metric counts those).
_watchdog_problems = _meter.create_counter(
    "outbox.watchdog.problems", unit="{check}", description="Watchdog checks, by problem found"
)


def record_check(problems: Iterable[str], opened: Iterable[str]) -> None:
    """One watchdog check: each problem it found, and whether it opened its incident."""
    new = set(opened)
    for code in problems:
        _watchdog_problems.add(1, {"problem": code, "opened": str(code in new).lower()})
