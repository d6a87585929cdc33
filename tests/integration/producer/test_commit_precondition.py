"""A batch with a preconditioned update, resent after its answer was lost, may be answered
FAILED_PRECONDITION (its own first send moved the document): that is read back, not taken
for a refusal."""

from __future__ import annotations

import pytest
from google.api_core import exceptions as google_exceptions
from google.cloud import firestore

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.errors import CommitFailed
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.producer.commits import Landing, after_failed_commit

pytestmark = pytest.mark.emulator

ITEMS = [{"productId": "sku-1", "quantity": 1}]


def test_failed_precondition_after_a_landed_send_is_landed(
    settings: Settings, db: firestore.Client
) -> None:
    lock = db.collection("locks").document("l-1")
    locked = lock.create({"status": "PROCESSING"}).update_time
    uow = FirestoreUnitOfWork(db, settings)
    create_new_order("c-1", ITEMS, uow)
    uow.add_update(lock, {"status": "COMPLETED"}, last_update_time=locked)
    writes, token = list(uow._writes), uow._token
    uow.commit()  # it lands; suppose its answer was lost and the resend got:
    resent = google_exceptions.FailedPrecondition("the stored version does not match")
    assert after_failed_commit(db, writes, token, resent, timeout=5) is Landing.LANDED


def test_failed_precondition_of_a_batch_that_never_landed_is_a_refusal(
    settings: Settings, db: firestore.Client
) -> None:
    lock = db.collection("locks").document("l-2")
    locked = lock.create({"status": "PROCESSING"}).update_time
    lock.update({"status": "TAKEN"})  # someone else moved it: our precondition fails
    uow = FirestoreUnitOfWork(db, settings)
    create_new_order("c-1", ITEMS, uow)
    uow.add_update(lock, {"status": "COMPLETED"}, last_update_time=locked)
    with pytest.raises(CommitFailed) as refused:
        uow.commit()
    assert isinstance(refused.value.__cause__, google_exceptions.FailedPrecondition)
    assert list(db.collection("orders").stream()) == []
