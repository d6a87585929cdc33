"""The inbox on the real emulator: duplicates, concurrency, crashes, leases, parking."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from app.config import Settings
from app.inbox import Inbox, InboxStatus, LeaseLost, Result, Verdict
from app.inbox.failures import contended

SOURCE = "//firestore.googleapis.com/projects/p/databases/(default)/documents/outbox"
ROOT = Path(__file__).resolve().parents[2]


def counter_effect(db: firestore.Client, name: str = "c-1") -> Any:
    def effect(transaction: firestore.Transaction) -> str:
        ref = db.collection("order_counts").document(name)
        transaction.set(ref, {"orders": firestore.Increment(1)}, merge=True)
        return "counted"

    return effect


def count(db: firestore.Client, name: str = "c-1") -> int:
    data = db.collection("order_counts").document(name).get().to_dict() or {}
    return int(data.get("orders", 0))


def in_parallel(n: int, work: Any) -> list[Any]:
    start = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        start.wait()
        try:
            results[i] = work()
        except Exception as exc:  # reported in the assertion below
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


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


CRASHING_CONSUMER = """
import os, sys, time
from app.config import Settings
from app.firestore_client import get_db_client
from app.inbox import Inbox

settings = Settings(project_id=sys.argv[1], emulator_host=sys.argv[2])
inbox = Inbox(get_db_client(settings), "mailer", lease_seconds=float(sys.argv[3]))

def send():
    print("effect started", flush=True)
    time.sleep(60)  # SIGKILLed here

inbox.process("{source}", "e-1", send)
"""


def test_a_crashed_consumers_record_is_taken_over_after_its_lease(
    db: firestore.Client, settings: Settings
) -> None:
    lease = 2.0
    script = textwrap.dedent(CRASHING_CONSUMER).replace("{source}", SOURCE)
    consumer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            script,
            str(settings.project_id),
            str(settings.emulator_host),
            str(lease),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert consumer.stdout is not None
    assert consumer.stdout.readline().strip() == "effect started"
    os.kill(consumer.pid, signal.SIGKILL)
    consumer.wait(timeout=10)

    inbox = Inbox(db, "mailer", lease_seconds=lease)
    early = inbox.process(SOURCE, "e-1", lambda: "sent")
    assert early.verdict is Verdict.IN_PROGRESS  # the lease is still live
    assert early.retry_after is not None and 0 < early.retry_after <= lease
    time.sleep(early.retry_after + 0.1)
    later = inbox.process(SOURCE, "e-1", lambda: "sent")
    assert (later.verdict, later.value, later.attempts) == (Verdict.APPLIED, "sent", 2)
    assert inbox.get(SOURCE, "e-1").get("status") == "SUCCEEDED"


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


def test_an_effect_that_outlives_its_lease_is_told_so(db: firestore.Client) -> None:
    inbox = Inbox(db, "mailer", lease_seconds=0.5)
    taken_over = []

    def slow() -> None:
        time.sleep(0.7)
        taken_over.append(inbox.process(SOURCE, "e-1", lambda: "second"))

    with pytest.raises(LeaseLost, match="lease expired before the effect finished"):
        inbox.process(SOURCE, "e-1", slow)
    assert taken_over[0].verdict is Verdict.APPLIED
    assert inbox.get(SOURCE, "e-1").get("status") == "SUCCEEDED"


def test_leases_are_timed_by_firestore_not_by_a_skewed_consumer_clock(
    db: firestore.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    inbox = Inbox(db, "mailer", lease_seconds=30)
    inbox.record(SOURCE, "e-1").create(inbox._records.leased(SOURCE, "e-1", 1, new=True))
    ahead = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
    monkeypatch.setattr("app.inbox.records._utcnow", lambda: ahead)
    result = inbox.process(SOURCE, "e-1", lambda: "sent")
    assert result.verdict is Verdict.IN_PROGRESS  # an hour-fast clock does not expire it


def test_records_carry_expire_at_for_a_ttl_policy(db: firestore.Client) -> None:
    inbox = Inbox(db, "mailer", retention=dt.timedelta(days=7))
    inbox.process(SOURCE, "e-1", lambda: "sent")
    expire_at = inbox.get(SOURCE, "e-1").get("expireAt")
    expected = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=7)
    assert abs((expire_at - expected).total_seconds()) < 60


def test_decorators_key_on_the_cloudevent_source_and_id(db: firestore.Client) -> None:
    from cloudevents.core.v1.event import CloudEvent

    inbox = Inbox(db, "order-counter")

    @inbox.idempotent_in_transaction
    def count_order(event: Any, transaction: firestore.Transaction) -> str:
        return str(counter_effect(db, event.get_data()["customerId"])(transaction))

    @Inbox(db, "mailer").idempotent
    def notify(event: Any) -> str:
        return f"mailed about {event['id']}"

    event = CloudEvent(
        {"id": "e-9", "source": SOURCE, "type": "OrderCreated"}, {"customerId": "c-9"}
    )
    assert count_order(event).verdict is Verdict.APPLIED
    assert count_order(event).verdict is Verdict.DUPLICATE
    assert count(db, "c-9") == 1
    mapping = {"id": "e-9", "source": SOURCE}
    assert notify(mapping).value == "mailed about e-9"
    assert notify(mapping).verdict is Verdict.DUPLICATE


def test_bad_arguments_are_refused(db: firestore.Client) -> None:
    with pytest.raises(ValueError, match="consumer name"):
        Inbox(db, " ")
    with pytest.raises(ValueError, match="non-empty source and id"):
        Inbox(db, "c").process("", "e-1", lambda: None)
