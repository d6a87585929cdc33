"""The inbox's OpenTelemetry metrics (the API only: no-ops until an SDK's meter provider is
set); the front door's are `firestore_outbox.idempotency.metrics`.

The design note's names map to these (docs/observability.md, "Metrics"):
`inbox_started/succeeded/failed_total` to `inbox.deliveries` by `verdict`, and
`inbox_heal_actions_total` to `inbox.heal.actions` by `action`. Low-cardinality attributes
only: never a key, an event id or an error text.
"""

from __future__ import annotations

from opentelemetry import metrics

_meter = metrics.get_meter("firestore-outbox")

_consumed = _meter.create_counter(
    "inbox.deliveries", unit="{delivery}", description="Deliveries a consumer answered, by verdict"
)
_heals = _meter.create_counter(
    "inbox.heal.actions",
    unit="{action}",
    description="Stuck inbox records healed: an expired lease taken over, or parked at the bound",
)


def record_consumed(consumer: str, verdict: str) -> None:
    """One delivery a consumer answered: `applied`, `duplicate`, `in_progress`, `parked`,
    `ignored`, `rejected` (refused: signature, malformed) or `failed` (answered 5xx)."""
    _consumed.add(1, {"messaging.consumer.group.name": consumer, "verdict": verdict})


def record_heal(consumer: str, action: str) -> None:
    """One stuck inbox record healed (the design note's self-healing of a PROCESSING record
    whose consumer died): `takeover` (its expired lease taken by the next delivery, which runs
    the effect again) or `park` (its last allowed attempt died: PARKED for an operator)."""
    _heals.add(1, {"messaging.consumer.group.name": consumer, "action": action})
