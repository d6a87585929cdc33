"""A commit whose answer is lost: the unit of work finds out whether its batch landed.

Faults are injected on the client's gRPC channel (tests/support/faults.py); Firestore is the real
emulator, and every write that gets through really lands.
"""

from __future__ import annotations

import grpc
import pytest
from google.cloud import firestore

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.errors import CommitFailed, CommitOutcomeUnknown
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.metering import meter
from tests.support.faults import faulty_client

ITEMS = [{"productId": "p1", "quantity": 1}]
EVENT = {"eventType": "PaymentTaken", "aggregateType": "payment", "aggregateId": "pay-1"}


def ids(db: firestore.Client, collection: str) -> list[str]:
    return sorted(doc.id for doc in db.collection(collection).get())


@pytest.mark.parametrize(
    ("code", "after_call"),
    [
        # The client library retries UNAVAILABLE; the retry meets the documents the first
        # Commit wrote and gets ALREADY_EXISTS.
        (grpc.StatusCode.UNAVAILABLE, True),
        # DEADLINE_EXCEEDED is not retried for Commit: the unit of work reads back at once.
        (grpc.StatusCode.DEADLINE_EXCEEDED, True),
        # The Commit never reached Firestore: the read-back finds nothing, and the batch is
        # sent once more.
        (grpc.StatusCode.DEADLINE_EXCEEDED, False),
    ],
    ids=["landed-then-retried", "landed-no-retry", "never-sent"],
)
def test_a_commit_whose_answer_was_lost_is_reported_written_once(
    db: firestore.Client, settings: Settings, code: grpc.StatusCode, after_call: bool
) -> None:
    client, faults = faulty_client(settings)
    faults.fail("Commit", code, after_call=after_call)

    with FirestoreUnitOfWork(client, settings) as uow:
        event_id = uow.outbox.add({**EVENT, "payload": {"amount": 5}})

    assert faults.injected == 1
    assert not uow.replayed
    assert ids(db, "outbox") == [event_id]


def test_a_keyed_order_whose_answer_was_lost_is_written_not_replayed(
    db: firestore.Client, settings: Settings
) -> None:
    client, faults = faulty_client(settings)
    faults.fail("Commit", grpc.StatusCode.UNAVAILABLE, after_call=True)

    with FirestoreUnitOfWork(client, settings) as uow:
        order_id = create_new_order("c1", ITEMS, uow, idempotency_key="k-lost")

    assert faults.injected == 1
    assert not uow.replayed  # this very commit wrote it; no earlier call did
    assert ids(db, "orders") == [order_id] and len(ids(db, "outbox")) == 1


def test_when_the_batch_cannot_be_read_back_the_outcome_is_unknown_not_failed(
    db: firestore.Client, settings: Settings
) -> None:
    client, faults = faulty_client(settings)
    faults.fail("Commit", grpc.StatusCode.DEADLINE_EXCEEDED, after_call=True)
    faults.fail("BatchGetDocuments", grpc.StatusCode.PERMISSION_DENIED, times=5)
    uow = FirestoreUnitOfWork(client, settings)
    event_id = uow.outbox.add({**EVENT, "payload": {}})

    with pytest.raises(CommitOutcomeUnknown) as raised:
        uow.commit()

    assert not isinstance(raised.value, CommitFailed)  # CommitFailed means nothing written
    assert raised.value.paths == [f"outbox/{event_id}"]
    assert "outbox/" + event_id in str(raised.value)
    assert ids(db, "outbox") == [event_id]  # it did land: "nothing written" would be a lie


def test_a_batch_sent_twice_without_an_answer_is_unknown_and_not_sent_again(
    db: firestore.Client, settings: Settings
) -> None:
    client, faults = faulty_client(settings)
    faults.fail("Commit", grpc.StatusCode.DEADLINE_EXCEEDED, times=3)
    uow = FirestoreUnitOfWork(client, settings)
    uow.outbox.add({**EVENT, "payload": {}})

    with pytest.raises(CommitOutcomeUnknown):
        uow.commit()

    assert faults.injected == 2  # the first send and one more, no third


def test_a_batch_without_creates_has_no_marker_so_a_lost_answer_is_unknown(
    db: firestore.Client, settings: Settings
) -> None:
    client, faults = faulty_client(settings)
    faults.fail("Commit", grpc.StatusCode.DEADLINE_EXCEEDED, after_call=True)
    uow = FirestoreUnitOfWork(client, settings)
    uow.add_set(client.collection("orders").document("o-1"), {"status": "CREATED"})

    with pytest.raises(CommitOutcomeUnknown):
        uow.commit()


def test_a_normal_commit_costs_one_commit_and_no_read(settings: Settings) -> None:
    from firestore_outbox.firestore.client import get_db_client

    client = get_db_client(settings)
    counts = meter(client)
    with FirestoreUnitOfWork(client, settings) as uow:
        create_new_order("c1", ITEMS, uow, idempotency_key="k-cost")

    assert counts.snapshot() == {"rpc:Commit": 1, "writes": 2}
