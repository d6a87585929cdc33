"""The relay on the real emulator, out of time mid-run: what it leased and did not deliver is
released, nothing left in PROCESSING."""

from __future__ import annotations

import time

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_orders, make_relay, outbox


def test_a_run_out_of_time_leaves_nothing_in_processing(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    def slowish(_: Received) -> ReceiverAnswer:
        time.sleep(0.1)
        return ReceiverAnswer(200)

    receiver.respond = slowish
    event_ids = add_orders(db, settings, 60)
    relay = make_relay(db, settings, receiver.url, batch_size=20, concurrency=1)

    summary = relay.run(time_budget=2.5)  # attempts need 1.5 s of it: about 1 s of publishing

    assert summary["stoppedBy"] == "budget"
    events = outbox(db, settings)
    statuses = [event["status"] for event in events.values()]
    assert 0 < statuses.count("PROCESSED") == summary["processed"] < 60
    assert statuses.count("PENDING") == 60 - summary["processed"]
    assert summary["released"] > 0
    assert all(e["attempts"] == 0 for e in events.values() if e["status"] == "PENDING")
    delivered = [r.event_id for r in receiver.received]
    assert len(delivered) == len(set(delivered)) == summary["processed"]
    assert set(delivered) <= set(event_ids)
