"""The Idempotency-Key front door's OpenTelemetry metrics (the API only: no-ops until an
SDK's meter provider is set); the inbox's are `firestore_outbox.consumer.metrics`.

The design note's names map to these (docs/observability.md, "Metrics"):
`idempotency_<outcome>_total` to `idempotency.requests` by `outcome`, and
`idempotency_processing_seconds` to `idempotency.processing.duration`. Low-cardinality
attributes only: never a key or an error text.
"""

from __future__ import annotations

from opentelemetry import metrics

_meter = metrics.get_meter("firestore-outbox")

_idempotency = _meter.create_counter(
    "idempotency.requests",
    unit="{request}",
    description="Keyed requests at the front door, by outcome",
)
# Buckets in seconds: a request holds its key from a few milliseconds (a Firestore write) to
# the lock's lease (60 s by default), past which a retry takes the key over.
_processing = _meter.create_histogram(
    "idempotency.processing.duration",
    unit="s",
    description="How long a keyed request held its key: from the lock to the answer kept "
    "or the key released",
    explicit_bucket_boundaries_advisory=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)


def record_idempotency(outcome: str) -> None:
    """One keyed request's outcome at the front door: `hit` (every checked key), `replay`,
    `conflict`, `in_progress`, `lock_lost` (the design note's `idempotency_<outcome>_total`)."""
    _idempotency.add(1, {"outcome": outcome})


def record_processing(seconds: float, outcome: str) -> None:
    """How long one request that ran under its key held it; `outcome`: `stored` (its answer
    kept for replays), `released` (the key freed for a retry) or `lock_lost`."""
    _processing.record(max(0.0, seconds), {"outcome": outcome})
