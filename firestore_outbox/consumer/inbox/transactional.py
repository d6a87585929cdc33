"""The inbox's transactional path, for an effect that must read: the effect's reads and writes
and the SUCCEEDED record in one Firestore transaction (`Inbox.process_in_transaction`).

A transaction locks what it reads until it ends, and a commit waits for every other
transaction that read the same record. Deliveries of one event that start together abort
each other's commits, so they take turns within a process
(`firestore_outbox.consumer.inbox.flights`) and retry
with jittered backoff for a bounded time; a record locked by a consumer killed inside its
transaction stays locked until Firestore expires the transaction (60 s on the emulator), which
no retry here outlasts. An effect that only writes is better off in
`firestore_outbox.consumer.inbox.batched`.
"""

from __future__ import annotations

import itertools
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from google.cloud import firestore

from firestore_outbox.consumer.inbox.failures import contended, firestore_failure
from firestore_outbox.consumer.inbox.flights import Flights
from firestore_outbox.consumer.inbox.records import InboxStatus, Records, Result, Verdict

if TYPE_CHECKING:
    from google.cloud.firestore import Client, DocumentReference, Transaction

T = TypeVar("T")
# How long one delivery keeps retrying a contended transaction before it fails (the sender
# retries later). A record locked by a dead consumer's transaction stays locked until Firestore
# expires it, so deliveries that waited longer would only pile up behind the lock.
CONTENTION_BUDGET_SECONDS = 5.0


def process_in_transaction(
    db: Client,
    ref: DocumentReference,
    records: Records,
    key: tuple[str, str],
    effect: Callable[[Transaction], T],
    *,
    timeout: float,
    flights: Flights,
    on_failure: Callable[[Exception], None],
    on_takeover: Callable[[], None],
) -> Result[T]:
    """Run `effect(transaction)` and record SUCCEEDED in the same transaction, unless the
    record says it succeeded, is parked or is in progress. An exception from `effect` is
    passed to `on_failure` (which records it) and re-raised; a Firestore error raised through
    `transaction` is Firestore's failure, not an attempt (contention runs the transaction
    again within the budget, anything else is raised uncounted). `on_takeover` hears a run
    that counted on a record whose consumer had died (applied, or failed)."""
    source, event_id = key
    raised: list[Exception] = []
    stuck: list[bool] = [False]  # whether the run that counted took over a stuck record

    @firestore.transactional
    def attempt(transaction: Transaction) -> Result[T]:
        snapshot = ref.get(transaction=transaction, timeout=timeout)
        blocked = records.blocked(snapshot)
        if blocked is not None:
            return blocked
        attempts, stuck[0] = records.next_attempt(snapshot), records.stuck(snapshot)
        try:
            value = effect(transaction)
        except Exception as exc:
            if not firestore_failure(exc):
                raised[:] = [exc]
            raise
        fields = records.leased(source, event_id, attempts, new=not snapshot.exists)
        fields.update(records.settled(InboxStatus.SUCCEEDED))
        if snapshot.exists:  # an update keeps createdAt and an earlier attempt's lastError
            transaction.update(ref, fields)
        else:
            transaction.set(ref, fields)
        return Result(Verdict.APPLIED, value, attempts)

    give_up_at = time.monotonic() + CONTENTION_BUDGET_SECONDS
    # One transaction per record at a time in this process: the others wait their turn
    # holding no lock, and then mostly read SUCCEEDED.
    with flights.turn(ref.id, give_up_at - time.monotonic()) as ours:
        if not ours:
            return Result(Verdict.IN_PROGRESS, retry_after=1.0)
        for round in itertools.count(1):
            try:
                result: Result[T] = attempt(db.transaction(max_attempts=2))
            except Exception as exc:
                if raised and raised[0] is exc:
                    on_failure(exc)
                    if stuck[0]:
                        on_takeover()
                    raise
                if not contended(exc) or time.monotonic() > give_up_at:
                    raise  # Firestore's own failure: not the effect's, so not counted
                # Deliveries of one event that start together abort each other's commits;
                # spread them out, and the winner's SUCCEEDED turns the others into DUPLICATE.
                time.sleep(random.uniform(0, 0.05 * 2 ** min(round, 5)))
                continue
            if stuck[0] and result.verdict is Verdict.APPLIED:
                on_takeover()
            return result
    raise AssertionError("unreachable")
