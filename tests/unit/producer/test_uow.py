from __future__ import annotations

import pytest
from google.api_core.exceptions import PermissionDenied, ServiceUnavailable
from google.auth.credentials import AnonymousCredentials
from google.cloud import firestore

from app.uow import FirestoreUnitOfWork
from firestore_outbox.errors import (
    BatchTooLarge,
    CommitFailed,
    CommitOutcomeUnknown,
    DocumentAlreadyExists,
    DocumentTooLarge,
    IdempotencyConflict,
    InvalidInput,
    UnitOfWorkClosed,
)
from firestore_outbox.firestore.limits import MAX_DOCUMENT_BYTES
from firestore_outbox.firestore.settings import Settings
from tests.unit.fakes import FakeDb

SETTINGS = Settings()


@pytest.fixture
def db() -> FakeDb:
    return FakeDb()


def uow_for(db: FakeDb, **limits: int) -> FirestoreUnitOfWork:
    return FirestoreUnitOfWork(db, SETTINGS, **limits)


def test_clean_exit_commits_every_queued_write_in_one_batch(db: FakeDb) -> None:
    with uow_for(db) as uow:
        uow.add_create(db.collection("a").document("1"), {"n": 1})
        uow.add_set(db.collection("a").document("2"), {"n": 2})
    assert db.documents("a") == {"1": {"n": 1}, "2": {"n": 2}}
    assert db.commit_calls == 1


def test_exception_in_block_discards_everything_and_propagates(db: FakeDb) -> None:
    with pytest.raises(RuntimeError, match="boom"), uow_for(db) as uow:
        uow.add_create(db.collection("a").document("1"), {"n": 1})
        raise RuntimeError("boom")
    assert db.documents("a") == {}
    assert db.commit_calls == 0
    with pytest.raises(UnitOfWorkClosed, match="discarded"):
        uow.commit()


def test_explicit_commit_is_not_repeated_on_exit(db: FakeDb) -> None:
    with uow_for(db) as uow:
        uow.add_create(db.collection("a").document("1"), {"n": 1})
        uow.commit()
    assert db.commit_calls == 1


def test_second_commit_and_late_writes_are_refused(db: FakeDb) -> None:
    uow = uow_for(db)
    uow.add_create(db.collection("a").document("1"), {"n": 1})
    uow.commit()
    with pytest.raises(UnitOfWorkClosed, match="already committed"):
        uow.commit()
    with pytest.raises(UnitOfWorkClosed):
        uow.add_delete(db.collection("a").document("1"))
    assert db.commit_calls == 1


def test_empty_unit_of_work_commits_without_a_round_trip(db: FakeDb) -> None:
    with uow_for(db):
        pass
    assert db.commit_calls == 0


def test_update_and_delete_are_applied(db: FakeDb) -> None:
    ref = db.collection("a").document("1")
    ref.set({"n": 1, "m": 1})
    db.collection("a").document("gone").set({"n": 0})
    with uow_for(db) as uow:
        uow.add_update(ref, {"n": 2})
        uow.add_delete(db.collection("a").document("gone"))
    assert db.documents("a") == {"1": {"n": 2, "m": 1}}


def test_savepoint_drops_only_the_writes_queued_inside_it(db: FakeDb) -> None:
    with uow_for(db) as uow:
        uow.add_create(db.collection("a").document("kept"), {"n": 1})
        with pytest.raises(InvalidInput), uow.savepoint():
            uow.add_create(db.collection("a").document("dropped"), {"n": 2})
            raise InvalidInput("second half is bad")
        assert uow.pending_writes == 1
    assert db.documents("a") == {"kept": {"n": 1}}


def test_document_over_one_mib_is_refused_when_added(db: FakeDb) -> None:
    uow = uow_for(db)
    with pytest.raises(DocumentTooLarge, match="a/big would be"):
        uow.add_set(db.collection("a").document("big"), {"s": "x" * MAX_DOCUMENT_BYTES})
    assert uow.pending_writes == 0


def test_batch_over_the_write_limit_is_refused_before_commit(db: FakeDb) -> None:
    uow = uow_for(db, max_writes=3)
    for n in range(3):
        uow.add_create(db.collection("a").document(str(n)), {"n": n})
    with pytest.raises(BatchTooLarge, match="at most 3 writes"):
        uow.add_create(db.collection("a").document("3"), {"n": 3})
    assert db.commit_calls == 0


def test_batch_over_the_byte_limit_is_refused_without_a_round_trip(db: FakeDb) -> None:
    uow = uow_for(db, max_batch_bytes=1000)
    uow.add_create(db.collection("a").document("1"), {"s": "x" * 600})
    uow.add_create(db.collection("a").document("2"), {"s": "x" * 600})
    with pytest.raises(BatchTooLarge, match="bytes; the limit is 1000") as raised:
        uow.commit()
    assert isinstance(raised.value, ValueError)
    assert db.commit_calls == 0 and db.documents("a") == {}


def test_data_the_client_cannot_encode_is_invalid_input_and_nothing_is_sent() -> None:
    # A real client, never contacted: encoding happens before the commit is sent.
    db = firestore.Client(project="unit-test", credentials=AnonymousCredentials())
    uow = FirestoreUnitOfWork(db, SETTINGS)
    uow.add_set(db.collection("a").document("1"), {"": "empty field name"})
    with pytest.raises(InvalidInput, match="cannot write a/1"):
        uow.commit()


def test_a_refusal_becomes_commit_failed_and_closes_the_unit(db: FakeDb) -> None:
    db.fail_next_commit = PermissionDenied("missing role")
    uow = uow_for(db)
    uow.add_create(db.collection("a").document("1"), {"n": 1})
    with pytest.raises(CommitFailed, match="missing role") as raised:
        uow.commit()
    assert isinstance(raised.value.__cause__, PermissionDenied)
    assert db.get_all_calls == 0  # an answer that refuses needs no read-back
    with pytest.raises(UnitOfWorkClosed, match="failed"):
        uow.commit()


def test_a_commit_that_raised_and_did_not_land_is_sent_once_more(db: FakeDb) -> None:
    db.fail_next_commit = ServiceUnavailable("network down")
    with uow_for(db) as uow:
        uow.add_create(db.collection("a").document("1"), {"n": 1})
    assert db.documents("a") == {"1": {"n": 1}}
    assert db.commit_calls == 2 and db.get_all_calls == 1


def test_a_batch_without_creates_whose_commit_got_no_answer_is_unknown(db: FakeDb) -> None:
    db.fail_next_commit = ServiceUnavailable("network down")
    uow = uow_for(db)
    uow.add_set(db.collection("a").document("1"), {"n": 1})
    with pytest.raises(CommitOutcomeUnknown, match="network down"):
        uow.commit()
    assert db.commit_calls == 1


def test_the_commit_token_is_the_unit_of_works_own_field(db: FakeDb) -> None:
    uow = uow_for(db)
    with pytest.raises(InvalidInput, match="commitToken"):
        uow.add_create(db.collection("a").document("1"), {"commitToken": "mine"})


def test_unguarded_create_on_existing_document_fails_the_batch(db: FakeDb) -> None:
    db.collection("a").document("1").set({"n": 0})
    with pytest.raises(DocumentAlreadyExists), uow_for(db) as uow:
        uow.add_create(db.collection("a").document("1"), {"n": 1})
        uow.add_create(db.collection("a").document("2"), {"n": 2})
    assert db.documents("a") == {"1": {"n": 0}}


def test_guarded_create_with_same_value_is_a_replay(db: FakeDb) -> None:
    db.collection("a").document("1").set({"hash": "h1"})
    with uow_for(db) as uow:
        uow.add_create(db.collection("a").document("1"), {"hash": "h1"}, idempotency_field="hash")
        uow.add_create(db.collection("b").document("e"), {"n": 1})
    assert uow.replayed
    assert db.documents("b") == {}


def test_guarded_create_with_other_value_is_a_conflict(db: FakeDb) -> None:
    db.collection("a").document("1").set({"hash": "h1"})
    with pytest.raises(IdempotencyConflict), uow_for(db) as uow:
        uow.add_create(db.collection("a").document("1"), {"hash": "h2"}, idempotency_field="hash")
    assert db.documents("a") == {"1": {"hash": "h1"}}


def test_guarded_create_that_is_absent_while_another_clashes_is_not_a_replay(db: FakeDb) -> None:
    db.collection("b").document("taken").set({"n": 0})
    with pytest.raises(DocumentAlreadyExists), uow_for(db) as uow:
        uow.add_create(db.collection("a").document("1"), {"hash": "h1"}, idempotency_field="hash")
        uow.add_create(db.collection("b").document("taken"), {"n": 1})
    assert not uow.replayed
    assert db.documents("a") == {}


def test_the_commit_and_its_read_back_wait_no_longer_than_the_firestore_deadline(
    db: FakeDb,
) -> None:
    db.fail_next_commit = ServiceUnavailable("network down")
    with FirestoreUnitOfWork(db, Settings(firestore_timeout_seconds=3)) as uow:
        uow.add_create(db.collection("a").document("1"), {"n": 1})
    commit, read_back, again = db.timeouts
    assert 0 < again <= read_back <= commit <= 3
