"""The relay's per-event leases on the real emulator: an abandoned lease is taken back, one of
two writers gets it, a settle after it was taken back is refused."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay.store import Change, LeaseStore
from tests.support.helpers import (
    add_raw_event,
    lease_taken_back_while_delivering,
    make_relay,
    outbox,
    utcnow,
)


def test_an_abandoned_lease_is_taken_back_and_counts_as_an_attempt(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    long_ago = utcnow() - dt.timedelta(hours=1)
    held = {"status": "PROCESSING", "updatedAt": long_ago, "processingInstanceId": "dead-relay"}
    add_raw_event(db, settings, "abandoned", attempts=1, **held)
    add_raw_event(db, settings, "exhausted", attempts=3, **held)  # max_attempts is 3
    add_raw_event(db, settings, "fresh", attempts=1, **{**held, "updatedAt": utcnow()})

    # Per-event leases write the takeover; partition leases: test_partition_order.py.
    summary = make_relay(db, settings, receiver.url, max_attempts=3, leases="event").run()

    assert (summary["reclaimed"], summary["processed"], summary["failed"]) == (2, 1, 1)
    assert [r.event_id for r in receiver.received] == ["abandoned"]
    events = outbox(db, settings)
    assert (events["abandoned"]["status"], events["abandoned"]["attempts"]) == ("PROCESSED", 2)
    assert "lease by dead-relay abandoned during attempt 1" in events["abandoned"]["lastError"]
    assert (events["exhausted"]["status"], events["exhausted"]["attempts"]) == ("FAILED", 3)
    assert "abandoned during attempt 3" in events["exhausted"]["lastError"]
    assert events["fresh"]["status"] == "PROCESSING"  # its lease still runs: not touched


def test_only_one_of_two_writers_holding_the_same_snapshot_gets_the_lease(
    db: firestore.Client, settings: Settings
) -> None:
    add_raw_event(db, settings, "e1")
    store = LeaseStore(db, settings.outbox_collection, timeout=5)
    [snapshot] = store.pending(utcnow(), 10)

    def lease(instance: str) -> dt.datetime | None:
        change = Change(
            snapshot.reference, snapshot.update_time, {"processingInstanceId": instance}
        )
        [result] = store.write_if_unchanged([change])
        return result

    assert lease("relay-a") is not None
    assert lease("relay-b") is None
    assert outbox(db, settings)["e1"]["processingInstanceId"] == "relay-a"


def test_a_settle_after_the_lease_was_taken_back_is_refused_and_logged(
    db: firestore.Client, settings: Settings, receiver: Receiver, caplog: pytest.LogCaptureFixture
) -> None:
    event_id = lease_taken_back_while_delivering(db, settings, receiver)
    # A lease by its own write; with partition leases: test_partition_leases.py.
    with caplog.at_level(logging.WARNING):
        summary = make_relay(db, settings, receiver.url, leases="event").run()

    assert (summary["lostLeases"], summary["processed"]) == (1, 0)
    event = outbox(db, settings)[event_id]
    assert (event["status"], event["processingInstanceId"]) == ("PROCESSING", "relay-b")
    assert f"lost the lease on event {event_id}" in caplog.text
