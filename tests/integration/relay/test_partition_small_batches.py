"""The partitioned drain with the smallest batch it accepts (`RELAY_BATCH_SIZE=1`), on the
emulator with a real HTTP downstream: one event at a time, every partition, in order."""

from __future__ import annotations

import random

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import make_relay, outbox
from tests.support.ordering import Sequences, add_steps


def test_a_batch_of_one_drains_every_aggregate_in_order(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_steps(db, settings, ["a", "b", "c", "a", "b", "a"])
    downstream = Sequences(0.0, random.Random(5))
    receiver.respond = downstream
    summary = make_relay(db, settings, receiver.url, batch_size=1, time_budget_seconds=10.0).run()

    assert (summary["processed"], summary["stoppedBy"]) == (6, "drained"), summary
    assert downstream.accepted == {"a": [0, 1, 2], "b": [0, 1], "c": [0]}
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
