"""Re-drive on the emulator: each filter selects what it says, a dry run writes nothing."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from firestore_outbox.redrive.selection import STATUSES, Selection
from tests.support.redrive import T0, ids, redrive, seed, update_times

CASES: dict[str, tuple[dict[str, Any], Any]] = {
    "delivered by default": ({}, lambda e: e["status"] == "PROCESSED"),
    "since": (
        {"since": T0 + dt.timedelta(minutes=6)},
        lambda e: e["status"] == "PROCESSED" and e["createdAt"] >= T0 + dt.timedelta(minutes=6),
    ),
    "until": (
        {"until": T0 + dt.timedelta(minutes=3)},
        lambda e: e["status"] == "PROCESSED" and e["createdAt"] < T0 + dt.timedelta(minutes=3),
    ),
    "one event type": (
        {"event_types": ("OrderPaid",)},
        lambda e: e["status"] == "PROCESSED" and e["eventType"] == "OrderPaid",
    ),
    "two event types": (
        {"event_types": ("OrderPaid", "OrderCreated")},
        lambda e: e["status"] == "PROCESSED",
    ),
    "aggregate type": (
        {"aggregate_type": "cart"},
        lambda e: e["status"] == "PROCESSED" and e["aggregateType"] == "cart",
    ),
    "aggregate id": (
        {"aggregate_id": "b"},
        lambda e: e["status"] == "PROCESSED" and e["aggregateId"] == "b",
    ),
    "status FAILED": ({"statuses": ("FAILED",)}, lambda e: e["status"] == "FAILED"),
    "every status": ({"statuses": STATUSES}, lambda e: True),
}


@pytest.mark.parametrize("case", CASES)
def test_each_filter_selects_what_it_names(db: Any, settings: Any, case: str) -> None:
    events = seed(db, settings)
    filters, expected = CASES[case]
    service, _ = redrive(db, settings, "http://127.0.0.1:9/unused")
    found = service.preview(Selection(**filters))
    wanted = [e for e in events if expected(e)]
    assert found.count == len(wanted) > 0
    assert found.first is not None and found.last is not None
    assert found.first.event_id == min(wanted, key=lambda e: e["createdAt"])["eventId"]
    assert found.last.event_id == max(wanted, key=lambda e: e["createdAt"])["eventId"]
    per_type: dict[str, int] = {}
    for event in wanted:
        per_type[event["eventType"]] = per_type.get(event["eventType"], 0) + 1
    assert dict(found.per_type) == per_type


def test_a_dry_run_writes_nothing(db: Any, settings: Any) -> None:
    seed(db, settings)
    before = update_times(db, settings)
    service, _ = redrive(db, settings, "http://127.0.0.1:9/unused")
    assert service.preview(Selection()).count == 11
    assert update_times(db, settings) == before
    assert list(service.jobs.collection.list_documents()) == []
    assert ids([]) == []
