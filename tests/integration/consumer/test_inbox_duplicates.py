"""The inbox on the real emulator: a duplicate delivery, or concurrent deliveries of one event,
run the effect once."""

from __future__ import annotations

import threading
import time
from collections import Counter

from google.cloud import firestore

from firestore_outbox.consumer.inbox import Inbox, InboxStatus, Result, Verdict
from firestore_outbox.consumer.inbox.failures import contended
from tests.support.inbox_effects import SOURCE, count, counter_effect, in_parallel


def test_a_duplicate_delivery_is_absorbed_and_runs_nothing(db: firestore.Client) -> None:
    inbox = Inbox(db, "order-counter")
    first = inbox.process_in_transaction(SOURCE, "e-1", counter_effect(db))
    again = inbox.process_in_transaction(SOURCE, "e-1", counter_effect(db))
    assert (first.verdict, first.value, first.attempts) == (Verdict.APPLIED, "counted", 1)
    assert (again.verdict, again.value) == (Verdict.DUPLICATE, None)
    assert count(db) == 1
    record = inbox.get(SOURCE, "e-1").to_dict() or {}
    assert record["status"] == InboxStatus.SUCCEEDED.value
    assert (record["consumer"], record["source"], record["eventId"]) == (
        "order-counter",
        SOURCE,
        "e-1",
    )
    # The key is (consumer, source, id): another consumer, or another source, starts afresh.
    assert Inbox(db, "mailer").process(SOURCE, "e-1", lambda: "sent").verdict is Verdict.APPLIED
    assert inbox.process(SOURCE + "-2", "e-1", lambda: 1).verdict is Verdict.APPLIED


def test_concurrent_deliveries_of_one_event_apply_a_transactional_effect_once(
    db: firestore.Client,
) -> None:
    inbox = Inbox(db, "order-counter")

    def deliver() -> Result[str]:
        return inbox.process_in_transaction(SOURCE, "e-1", counter_effect(db))

    results = in_parallel(8, deliver)
    verdicts = Counter(getattr(r, "verdict", r) for r in results)
    # A delivery still contended after the inbox's contention budget (5 s: reached only on a
    # loaded machine) gives up with Firestore's contention error, for the sender to retry.
    gave_up = [r for r in results if isinstance(r, Exception) and contended(r)]
    assert verdicts[Verdict.APPLIED] == 1, results
    assert verdicts[Verdict.DUPLICATE] + len(gave_up) == 7, results
    assert count(db) == 1
    # The retries of those that gave up are duplicates: the effect stays applied once.
    assert {deliver().verdict for _ in gave_up} <= {Verdict.DUPLICATE}
    assert count(db) == 1


def test_concurrent_deliveries_of_one_event_run_a_plain_effect_once(db: firestore.Client) -> None:
    inbox = Inbox(db, "mailer")
    runs: list[int] = []

    def send() -> str:
        runs.append(1)
        time.sleep(0.3)  # still running while the other deliveries arrive
        return "sent"

    results = in_parallel(8, lambda: inbox.process(SOURCE, "e-1", send))
    verdicts = Counter(getattr(r, "verdict", r) for r in results)
    assert len(runs) == 1
    assert verdicts[Verdict.APPLIED] == 1
    assert set(verdicts) <= {Verdict.APPLIED, Verdict.IN_PROGRESS, Verdict.DUPLICATE}, results
    assert inbox.process(SOURCE, "e-1", send).verdict is Verdict.DUPLICATE


def test_concurrent_transactional_deliveries_in_one_consumer_take_turns(
    db: firestore.Client,
) -> None:
    # Transactions that read one record block each other's commits; redeliveries retrying
    # together kept a drill's event locked for good. In one process they now take turns.
    inbox = Inbox(db, "order-counter")
    guard, running, most = threading.Lock(), [0], [0]

    def slow_effect(transaction: firestore.Transaction) -> str:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.2)  # still in its transaction while the others arrive
        with guard:
            running[0] -= 1
        return str(counter_effect(db)(transaction))

    results = in_parallel(8, lambda: inbox.process_in_transaction(SOURCE, "e-1", slow_effect))
    verdicts = Counter(getattr(r, "verdict", r) for r in results)
    assert most[0] == 1, results  # never two transactions of this event at once
    assert verdicts == {Verdict.APPLIED: 1, Verdict.DUPLICATE: 7}, results
    assert count(db) == 1
