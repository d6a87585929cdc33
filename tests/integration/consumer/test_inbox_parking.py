"""The inbox on the real emulator: a failed effect counts an attempt (its transactional writes
rolled back), and an event is parked after the bound, never to run again."""

from __future__ import annotations

import time
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.inbox import Inbox, Verdict
from tests.support.inbox_effects import SOURCE, count, counter_effect


def test_a_failed_transactional_effect_rolls_back_its_writes_and_counts_an_attempt(
    db: firestore.Client,
) -> None:
    inbox = Inbox(db, "order-counter", max_attempts=3)

    def broken(transaction: firestore.Transaction) -> None:
        counter_effect(db)(transaction)
        raise RuntimeError("downstream ledger refused")

    with pytest.raises(RuntimeError, match="ledger refused"):
        inbox.process_in_transaction(SOURCE, "e-1", broken)
    assert count(db) == 0  # the increment was queued in the transaction, and rolled back
    record = inbox.get(SOURCE, "e-1").to_dict() or {}
    assert (record["status"], record["attempts"]) == ("FAILED", 1)
    assert record["lastError"] == "attempt 1: RuntimeError: downstream ledger refused"
    result = inbox.process_in_transaction(SOURCE, "e-1", counter_effect(db))
    assert (result.verdict, result.attempts) == (Verdict.APPLIED, 2)
    assert count(db) == 1


@pytest.mark.parametrize("transactional", [True, False], ids=["transaction", "plain"])
def test_an_event_is_parked_after_the_bound_and_then_never_runs(
    db: firestore.Client, transactional: bool
) -> None:
    inbox = Inbox(db, "order-counter", max_attempts=3)
    runs: list[int] = []

    def poison(*_: Any) -> None:
        runs.append(1)
        raise ValueError("customerId missing")

    deliver = inbox.process_in_transaction if transactional else inbox.process
    for _ in range(3):
        with pytest.raises(ValueError):
            deliver(SOURCE, "e-1", poison)
    record = inbox.get(SOURCE, "e-1").to_dict() or {}
    assert (record["status"], record["attempts"]) == ("PARKED", 3)
    assert record["lastError"] == "attempt 3: ValueError: customerId missing"
    assert record["completedAt"] is not None
    result = deliver(SOURCE, "e-1", poison)
    assert (result.verdict, result.attempts) == (Verdict.PARKED, 3)
    assert len(runs) == 3


def test_a_record_abandoned_on_its_last_attempt_is_parked(db: firestore.Client) -> None:
    inbox = Inbox(db, "mailer", lease_seconds=0.5, max_attempts=1)
    inbox.record(SOURCE, "e-1").create(
        {**inbox._records.leased(SOURCE, "e-1", 1, new=True)}  # a consumer that died
    )
    time.sleep(0.6)
    result = inbox.process(SOURCE, "e-1", lambda: "sent")
    assert (result.verdict, result.attempts) == (Verdict.PARKED, 1)
    record = inbox.get(SOURCE, "e-1").to_dict() or {}
    assert record["status"] == "PARKED"
    assert record["lastError"] == "abandoned during attempt 1 (lease expired)"
