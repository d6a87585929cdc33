"""The relay's OpenTelemetry metrics (the API only: no-ops until an SDK's meter provider is set).

Low-cardinality attributes only: the publisher (`messaging.system`), its configured
destination, an attempt's outcome, `error.type` (a short class such as `HTTP 503`) and an
event's status; never an event id, an aggregate or an error text. docs/observability.md's
"Metrics" maps the design note's names (`outbox_dispatch_attempts_total`, ...) to these.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

_meter = metrics.get_meter("firestore-outbox")


class _Tally:
    """Attempts counted in process and reported as a cumulative observable counter: a dict
    increment per attempt instead of the SDK's per-measurement bookkeeping (about 8 us)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[tuple[str, str], ...], int] = {}

    def add(self, labels: tuple[tuple[str, str], ...]) -> None:
        with self._lock:
            self._counts[labels] = self._counts.get(labels, 0) + 1

    def observe(self, options: CallbackOptions) -> Iterable[Observation]:
        with self._lock:
            counts = list(self._counts.items())
        return [Observation(n, dict(labels)) for labels, n in counts]


_attempts = _Tally()
_meter.create_observable_counter(
    "outbox.deliveries",
    callbacks=[_attempts.observe],
    unit="{attempt}",
    description="Delivery attempts, by outcome",
)
# The messaging conventions' client duration: one publish, from send to answer.
# Buckets in seconds (the SDK's default ones are for milliseconds): a publish within the HTTP
# timeout (10 s by default); a lag from a follow-mode moment to a backoff's quarter hour.
_duration = _meter.create_histogram(
    "messaging.client.operation.duration",
    unit="s",
    description="Duration of one publish",
    explicit_bucket_boundaries_advisory=(
        0.005,
        0.01,
        0.025,
        0.05,
        0.1,
        0.25,
        0.5,
        1,
        2.5,
        5,
        7.5,
        10,
        30,
    ),
)
_lag = _meter.create_histogram(
    "outbox.delivery.lag",
    unit="s",
    description="From the event's commit to its delivery (relay clock against commit time)",
    explicit_bucket_boundaries_advisory=(
        0.1,
        0.5,
        1,
        2,
        5,
        10,
        30,
        60,
        120,
        300,
        600,
        900,
        1800,
        3600,
    ),
)
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


class AttemptMetrics:
    """The per-attempt measurements of one publisher and destination: `attributes` are its
    `messaging.system` and `messaging.destination.name`. The attribute sets are built once
    per outcome, not once per attempt (the relay records one per event)."""

    def __init__(self, attributes: Mapping[str, str]) -> None:
        self._attributes = dict(attributes)
        self._keys: dict[str, tuple[tuple[str, str], ...]] = {}
        self._timed: dict[str | None, dict[str, str]] = {}

    def record(
        self, outcome: str, error_type: str | None, seconds: float, lag_seconds: float | None
    ) -> None:
        """One attempt: its outcome, `error.type` unless delivered, the publish's duration,
        and its commit-to-delivery lag when it was delivered."""
        key = self._keys.get(outcome)
        if key is None:
            key = self._keys[outcome] = (*self._attributes.items(), ("outcome", outcome))
        _attempts.add(key)
        timed = self._timed.get(error_type)
        if timed is None:
            timed = {**self._attributes, "messaging.operation.name": "send"}
            if error_type is not None:
                timed["error.type"] = error_type
            if len(self._timed) < _MAX_ERROR_TYPES:  # error types are few; bounded anyway
                self._timed[error_type] = timed
        _duration.record(seconds, timed)
        if lag_seconds is not None:
            _lag.record(max(0.0, lag_seconds), self._attributes)


_MAX_ERROR_TYPES = 64


def record_attempt(
    attributes: Mapping[str, str],
    outcome: str,
    error_type: str | None,
    seconds: float,
    lag_seconds: float | None,
) -> None:
    """One delivery attempt (`AttemptMetrics.record`), for a caller without an
    `AttemptMetrics` of its own."""
    AttemptMetrics(attributes).record(outcome, error_type, seconds, lag_seconds)


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
