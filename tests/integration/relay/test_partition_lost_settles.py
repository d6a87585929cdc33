"""A settle refused because another writer moved the event (a relay of 0.2 beside this one, an
operator) while the partition is still held, on the emulator with a real HTTP downstream."""

from __future__ import annotations

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import make_relay, outbox
from tests.support.ordering import add_steps


def test_a_settle_lost_to_another_writer_does_not_keep_the_partition(
    db: firestore.Client, settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAY_PARTITIONS", "1")  # the writers agree with the relays
    [moved] = add_steps(db, settings, ["a"])
    ref = db.collection(settings.outbox_collection).document(moved)

    def leased_by_a_relay_of_0_2_meanwhile(request: Received) -> ReceiverAnswer:
        if request.json()["aggregate"] == "a":
            ref.update(
                {
                    "status": "PROCESSING",
                    "processingInstanceId": "relay-0.2",
                    "attempts": firestore.Increment(1),
                    "updatedAt": firestore.SERVER_TIMESTAMP,
                }
            )
        return ReceiverAnswer(200)

    receiver.respond = leased_by_a_relay_of_0_2_meanwhile
    lease = 30.0  # far longer than the test: a partition kept is kept for all of it
    first = make_relay(db, settings, receiver.url, partitions=1, lock_timeout_seconds=lease).run(
        instance_id="A"
    )
    assert first["lostLeases"] == 1, first

    [later] = add_steps(db, settings, ["b"])  # another aggregate of the same partition
    second = make_relay(db, settings, receiver.url, partitions=1, lock_timeout_seconds=lease).run(
        instance_id="B"
    )
    assert (second["partitionsClaimed"], second["processed"]) == (1, 1), second
    assert outbox(db, settings)[later]["status"] == "PROCESSED"
    holders = {d.id: d.get("holder") for d in db.collection("outbox_partitions").get()}
    assert holders == {"0": None}
