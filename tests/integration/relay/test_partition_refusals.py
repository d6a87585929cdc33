"""The partitioned relay (the default) and writes Firestore refuses: the one write it makes
to another producer's event is its settle, which also heals it (its `partition` and
`sequence`); when Firestore refuses it (the document would pass 1 MiB), only that event is
parked, and the summary and the log say so as they do for any refused settle."""

from __future__ import annotations

import logging

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from tests.integration.relay.test_relay_refusals import add_event_near_the_limit
from tests.support.helpers import add_orders, add_raw_event, make_relay, outbox


def test_a_heal_firestore_refuses_parks_only_its_event_counted_and_logged(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    caplog: pytest.LogCaptureFixture,
) -> None:
    event_ids = add_orders(db, settings, 3)
    # Written by hand without a partition, 8 bytes short of the limit: its settle, with the
    # heal's `partition` and `sequence` (35 bytes), does not fit, nor does a reason in
    # `lastError`; FAILED (a byte shorter than PENDING) does, and the log names the reason.
    add_event_near_the_limit(db, settings, "huge", headroom=8)
    relay = make_relay(db, settings, receiver.url)
    assert relay.config.partitions.leases == "partition"

    with caplog.at_level(logging.ERROR, logger="firestore_outbox.relay"):
        summary = relay.run()
    again = relay.run()

    events = outbox(db, settings)
    assert summary["status"] == "ok", summary
    assert (summary["refused"], summary["processed"], summary["failed"]) == (1, 3, 1), summary
    assert {events[e]["status"] for e in event_ids} == {"PROCESSED"}
    assert events["huge"]["status"] == "FAILED"
    refused = [
        r.structured for r in caplog.records if r.structured["event"] == "relay.write_refused"
    ]
    assert [(r["eventId"], r["parked"], r["outcome"]) for r in refused] == [
        ("huge", True, "processed")
    ]
    assert refused[0]["error"].startswith("INVALID_ARGUMENT"), refused
    assert (again["status"], again["leased"], again["refused"]) == ("ok", 0, 0)
    # Sent once (its settle was the heal), parked FAILED for an operator, not sent again.
    assert sorted(r.event_id for r in receiver.received) == sorted([*event_ids, "huge"])


def test_a_head_parked_after_its_settle_was_refused_holds_its_aggregate(
    db: firestore.Client, settings: Settings
) -> None:
    # Another producer's events of one aggregate: the head 200 bytes short of the limit, room
    # for the heal, not for a retry's 500-character lastError; FAILED with a reason does.
    add_event_near_the_limit(db, settings, "huge", headroom=200)
    db.collection(settings.outbox_collection).document("huge").update({"aggregateId": "x"})
    add_raw_event(db, settings, "later", aggregateId="x", payload={"step": 2})

    def answer(request: Received) -> ReceiverAnswer:
        return (
            ReceiverAnswer(503, body=b"busy " * 200)
            if request.event_id == "huge"
            else ReceiverAnswer(200)
        )

    with Receiver(answer) as downstream:
        relay = make_relay(db, settings, downstream.url)
        first, second = relay.run(), relay.run()
        sent = [r.event_id for r in downstream.received]

    events = outbox(db, settings)
    assert (first["refused"], events["huge"]["status"]) == (1, "FAILED"), first
    assert (sent, events["later"]["status"]) == (["huge"], "PENDING"), second
    assert events["huge"].get("held") is True  # as a FAILED settle would hold it
