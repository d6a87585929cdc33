"""The inbox when Firestore misbehaves around an effect: what is counted, kept and raised.

Faults are injected on the consumer's gRPC channel (tests/support/faults.py); Firestore is the real
emulator.
"""

from __future__ import annotations

import logging
from typing import Any

import grpc
import pytest
from google.api_core import exceptions as google_exceptions
from google.cloud import firestore

from firestore_outbox.consumer.inbox import Inbox, InboxStatus, Verdict
from firestore_outbox.firestore.settings import Settings
from tests.support.faults import FaultInjector, faulty_client

SOURCE = "//firestore.googleapis.com/projects/p/databases/(default)/documents/outbox"


class Declined(Exception):
    """The effect's own failure."""


def counting_effect(db: firestore.Client, faults: FaultInjector | None = None, **fail: Any) -> Any:
    """Reads and increments a counter through the transaction; on its first run, `fail`
    (method and code) is armed just before that read, so the effect's own read fails."""
    runs: list[int] = []

    def effect(transaction: firestore.Transaction) -> int:
        runs.append(1)
        if faults is not None and len(runs) == 1:
            faults.fail(fail["method"], fail["code"])
        ref = db.collection("order_counts").document("c-1")
        seen = ref.get(transaction=transaction)
        total = int((seen.to_dict() or {}).get("orders", 0)) + 1
        transaction.set(ref, {"orders": total})
        return total

    return effect


def test_succeeded_keeps_the_created_at_and_last_error_of_an_earlier_failure(
    db: firestore.Client,
) -> None:
    inbox = Inbox(db, "counter")

    def declined(transaction: firestore.Transaction) -> None:
        raise Declined("card declined")

    with pytest.raises(Declined):
        inbox.process_in_transaction(SOURCE, "e-1", declined)
    failed = inbox.get(SOURCE, "e-1").to_dict() or {}
    result = inbox.process_in_transaction(SOURCE, "e-1", counting_effect(db))

    record = inbox.get(SOURCE, "e-1").to_dict() or {}
    assert result.verdict is Verdict.APPLIED and result.attempts == 2
    assert record["status"] == InboxStatus.SUCCEEDED.value and record["attempts"] == 2
    assert record["createdAt"] == failed["createdAt"]
    assert record["lastError"] == failed["lastError"] == "attempt 1: Declined: card declined"


def failing_read(settings: Settings, code: grpc.StatusCode) -> tuple[Inbox, FaultInjector, Any]:
    """An inbox whose effect's own read fails with `code` on its first run."""
    client, faults = faulty_client(settings)
    effect = counting_effect(client, faults, method="BatchGetDocuments", code=code)
    return Inbox(client, "counter"), faults, effect


def test_an_aborted_read_inside_the_transaction_is_retried_not_counted(
    settings: Settings,
) -> None:
    inbox, faults, effect = failing_read(settings, grpc.StatusCode.ABORTED)

    result = inbox.process_in_transaction(SOURCE, "e-2", effect)

    record = inbox.get(SOURCE, "e-2").to_dict() or {}
    assert faults.injected == 1
    assert result.verdict is Verdict.APPLIED and result.value == 1 and result.attempts == 1
    assert record["status"] == InboxStatus.SUCCEEDED.value and record["attempts"] == 1
    assert record["lastError"] is None


def test_a_firestore_failure_inside_the_transaction_is_raised_but_not_counted(
    settings: Settings,
) -> None:
    inbox, _, effect = failing_read(settings, grpc.StatusCode.RESOURCE_EXHAUSTED)

    with pytest.raises(google_exceptions.ResourceExhausted):
        inbox.process_in_transaction(SOURCE, "e-3", effect)

    assert not inbox.get(SOURCE, "e-3").exists  # no attempt recorded against the event
    assert inbox.process_in_transaction(SOURCE, "e-3", effect).attempts == 1


def arm_write_failures(faults: FaultInjector) -> None:
    """The next write fails for good, whichever RPC the inbox writes its record with."""
    for method in ("Commit", "BatchWrite"):
        faults.fail(method, grpc.StatusCode.PERMISSION_DENIED)


@pytest.mark.parametrize("transactional", [False, True], ids=["process", "in-transaction"])
def test_the_effects_exception_reaches_the_caller_when_recording_its_failure_fails(
    settings: Settings, caplog: pytest.LogCaptureFixture, transactional: bool
) -> None:
    client, faults = faulty_client(settings)
    inbox = Inbox(client, "consumer")

    def effect(*transaction: firestore.Transaction) -> None:
        arm_write_failures(faults)
        raise Declined("card declined")

    with caplog.at_level(logging.WARNING), pytest.raises(Declined, match="card declined"):
        if transactional:
            inbox.process_in_transaction(SOURCE, "e-4", effect)
        else:
            inbox.process(SOURCE, "e-4", effect)

    assert faults.injected >= 1
    assert any("could not record" in r.getMessage() for r in caplog.records)
