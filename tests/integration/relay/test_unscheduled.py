"""Events another producer wrote with the contract's fields but without a timestamp
`nextAttemptAt` (or with `attempts` as a double): delivered within one run, malformed ones
parked, and counted and named by `outbox status` and `outbox reconcile`."""

from __future__ import annotations

import json

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_orders, add_raw_event, make_relay, outbox
from tests.support.operator_commands import (
    Run,
    run_outbox,  # noqa: F401  (the `run` fixture)
)


def add_foreign_events(db: firestore.Client, settings: Settings) -> dict[str, str]:
    """What other producers write; each id mapped to the status one relay run must leave."""
    add_raw_event(db, settings, "no-next")
    ref = db.collection(settings.outbox_collection).document("no-next")
    ref.update({"nextAttemptAt": firestore.DELETE_FIELD})  # the contract has no such field
    add_raw_event(db, settings, "null-next", nextAttemptAt=None)
    add_raw_event(db, settings, "text-next", nextAttemptAt="as soon as possible")
    add_raw_event(db, settings, "double-attempts", attempts=0.0)
    add_raw_event(db, settings, "double-null-next", attempts=0.0, nextAttemptAt=None)
    add_raw_event(db, settings, "malformed", eventType=None, nextAttemptAt=None)
    return {
        "no-next": "PROCESSED",
        "null-next": "PROCESSED",
        "text-next": "PROCESSED",
        "double-attempts": "PROCESSED",
        "double-null-next": "PROCESSED",
        "malformed": "FAILED",
    }


def test_events_without_next_attempt_at_are_delivered_in_one_run_and_malformed_ones_parked(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    ordered = add_orders(db, settings, 2)
    expected = add_foreign_events(db, settings)

    summary = make_relay(db, settings, receiver.url).run()

    events = outbox(db, settings)
    assert {e: events[e]["status"] for e in expected} == expected, summary
    assert {events[e]["status"] for e in ordered} == {"PROCESSED"}
    # With partition leases every foreign event lacks a partition too: all 6 are healed.
    assert (summary["unscheduled"], summary["poisoned"]) == (6, 1)
    assert events["malformed"]["lastError"].startswith("poison event: eventType must be")
    assert type(events["double-attempts"]["attempts"]) is int  # healed to an integer
    delivered = sorted(r.event_id or "" for r in receiver.received)
    assert delivered == sorted([*ordered, *(e for e, s in expected.items() if s == "PROCESSED")])
    assert make_relay(db, settings, receiver.url).run()["unscheduled"] == 0  # nothing left


def test_status_and_reconcile_count_and_name_unscheduled_events(
    db: firestore.Client,
    settings: Settings,
    run: Run,
) -> None:
    add_orders(db, settings, 1)
    add_raw_event(db, settings, "null-next", nextAttemptAt=None)
    add_raw_event(db, settings, "text-next", nextAttemptAt="as soon as possible")

    code, out, _ = run("status", "--json")
    status = json.loads(out)
    assert (code, status["due"], status["unscheduled"]) == (0, 3, 2)
    assert sorted(status["unscheduledEventIds"]) == ["null-next", "text-next"]
    assert status["lagSeconds"] is not None
    code, out, _ = run("status")
    assert "3 due now (2 without nextAttemptAt or partition: null-next, text-next)" in out

    code, out, _ = run("reconcile", "--json")
    found = json.loads(out)
    assert (code, found["counts"]["unscheduled"]) == (1, 2)
    assert sorted(e["eventId"] for e in found["unscheduledEvents"]) == ["null-next", "text-next"]
    # Not in the partition-led query of recent events, but their orders are looked for too.
    orphans = sorted(e["eventId"] for e in found["eventsWithoutOrder"])
    assert orphans == ["null-next", "text-next"]
    code, out, _ = run("reconcile")
    assert "PENDING without a timestamp nextAttemptAt or a partition" in out and "text-next" in out
