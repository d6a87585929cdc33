"""`outbox reconcile`: stuck events, orders without their event and events without their order,
within a window; nothing written."""

from __future__ import annotations

import datetime as dt
import json

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_orders, add_own_event, utcnow
from tests.support.operator_commands import (
    DAY,
    Run,
    run_outbox,  # noqa: F401  (the `run` fixture)
    update_times,
)


def test_reconcile_reports_each_kind_of_anomaly(
    run: Run, db: firestore.Client, settings: Settings
) -> None:
    add_orders(db, settings, 2)  # healthy: an order and its event each
    # Taken before "lonely" exists: an auto id may sort after it.
    order_id = next(iter(db.collection(settings.orders_collection).get())).id
    db.collection(settings.orders_collection).document("lonely").set(
        {"customerId": "c", "items": [], "status": "CREATED", "createdAt": utcnow()}
    )
    add_own_event(db, settings, "orphan", aggregateId="deleted-order")
    add_own_event(db, settings, "foreign", aggregateType="payment", aggregateId="p-1")
    hour_ago = utcnow() - dt.timedelta(hours=1)
    add_own_event(
        db,
        settings,
        "stuck",
        status="PROCESSING",
        updatedAt=hour_ago,
        aggregateId=order_id,
        processingInstanceId="dead-relay",
        attempts=2,
    )
    before = update_times(db, settings)

    code, out, _ = run("reconcile", "--json")

    assert code == 1
    found = json.loads(out)
    assert found["counts"] == {
        "stuck": 1,
        "ordersWithoutEvent": 1,
        "eventsWithoutOrder": 1,
        "unscheduled": 0,
    }
    assert [e["eventId"] for e in found["stuckEvents"]] == ["stuck"]
    assert found["stuckEvents"][0]["processingInstanceId"] == "dead-relay"
    assert found["ordersWithoutEvent"] == ["lonely"]
    assert found["eventsWithoutOrder"] == [{"eventId": "orphan", "orderId": "deleted-order"}]

    code, out, _ = run("reconcile")
    assert code == 1
    assert "PROCESSING past their lease: 1" in out and "stuck    dead-relay" in out
    assert "orders with no outbox event: 1" in out and "lonely" in out
    assert "events whose order does not exist: 1" in out and "orphan   deleted-order" in out
    assert update_times(db, settings) == before


def test_reconcile_of_a_healthy_outbox_exits_0(
    run: Run, db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 3)
    code, out, _ = run("reconcile", "--json")
    assert code == 0 and json.loads(out)["counts"] == dict.fromkeys(
        ("stuck", "ordersWithoutEvent", "eventsWithoutOrder", "unscheduled"), 0
    )


def test_reconcile_looks_only_within_its_window(
    run: Run, db: firestore.Client, settings: Settings
) -> None:
    old = utcnow() - 3 * DAY
    add_own_event(db, settings, "old-orphan", aggregateId="gone", createdAt=old)
    assert run("reconcile", "--since", "1d")[0] == 0
    code, out, _ = run("reconcile", "--since", "4d", "--json")
    assert code == 1 and json.loads(out)["eventsWithoutOrder"][0]["eventId"] == "old-orphan"
