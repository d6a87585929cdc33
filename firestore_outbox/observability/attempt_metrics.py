"""The relay's per-attempt OpenTelemetry metrics (the API only: no-ops until an SDK's meter
provider is set): `outbox.deliveries` by outcome, `messaging.client.operation.duration` (one
publish, from send to answer) and `outbox.delivery.lag` (commit to delivery).

Low-cardinality attributes only: the publisher (`messaging.system`), its configured
destination, the outcome and `error.type` (a short class such as `HTTP 503`); never an event
id, an aggregate or an error text.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from opentelemetry import metrics
from opentelemetry.metrics import CallbackOptions, Observation

__all__ = ["AttemptMetrics", "record_attempt"]

_meter = metrics.get_meter("firestore-outbox")


class _Tally:
    """Attempts counted in process and reported as a cumulative observable counter: a dict
    increment per attempt instead of the SDK's per-measurement bookkeeping."""

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
