"""`outbox reconcile`: stuck events, aggregates (the orders, or the ones named with
`--aggregate`) without their event and events without their aggregate, within a window;
nothing written."""

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
    assert "orders with no outbox event (order): 1" in out and "lonely" in out
    assert "order events whose document in orders does not exist: 1" in out
    assert "orphan   deleted-order" in out
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


def test_reconcile_checks_the_aggregates_it_is_told_about_and_names_them(
    run: Run, db: firestore.Client, settings: Settings, unique: str
) -> None:
    invoices, refunds = f"invoices-{unique}", f"refunds-{unique}"
    db.collection(invoices).document("inv-1").set({"createdAt": utcnow()})  # has its event
    db.collection(invoices).document("inv-lonely").set({"createdAt": utcnow()})
    db.collection(refunds).document("ref-1").set({"createdAt": utcnow()})
    add_own_event(db, settings, f"e1-{unique}", aggregateType="invoice", aggregateId="inv-1")
    add_own_event(db, settings, f"e2-{unique}", aggregateType="invoice", aggregateId="inv-gone")
    add_own_event(db, settings, f"e3-{unique}", aggregateType="refund", aggregateId="ref-1")
    # An order with no event: not looked at, the orders are not among the aggregates named.
    db.collection(settings.orders_collection).document("lonely").set({"createdAt": utcnow()})

    code, out, _ = run(
        "reconcile", "--aggregate", f"invoice={invoices}", "--aggregate", f"refund={refunds}"
    )

    assert code == 1
    assert f"the aggregates invoice in {invoices}, refund in {refunds}" in out
    assert f"{invoices} with no outbox event (invoice): 1" in out and "inv-lonely" in out
    assert f"invoice events whose document in {invoices} does not exist: 1" in out
    assert f"e2-{unique}  inv-gone" in out
    assert f"{refunds} with no outbox event (refund): 0" in out
    assert "orders with no outbox event" not in out
    code, out, _ = run("reconcile", "--aggregate", f"invoice={invoices}", "--json")
    found = json.loads(out)
    assert code == 1 and list(found["aggregates"]) == ["invoice"]
    assert found["aggregates"]["invoice"] == {
        "collection": invoices,
        "counts": {"withoutEvent": 1, "eventsWithoutDocument": 1},
        "withoutEvent": ["inv-lonely"],
        "eventsWithoutDocument": [{"eventId": f"e2-{unique}", "aggregateId": "inv-gone"}],
    }


def test_reconcile_refuses_an_aggregate_it_cannot_read_in_one_line(run: Run) -> None:
    for bad in ("invoices", "=invoices", "invoice=", "invoice=a/b"):
        code, _, err = run("reconcile", "--aggregate", bad)
        assert code == 2 and "TYPE=COLLECTION" in err, (bad, err)
