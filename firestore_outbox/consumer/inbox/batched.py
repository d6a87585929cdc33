"""The inbox's lock-free path, for an effect made of blind writes (no reads).

`Inbox.process_in_transaction` reads the inbox record inside a Firestore transaction, and that
read locks the record until the transaction ends. A consumer killed between the read and the
commit leaves the lock to Firestore's transaction expiry (60 s on the emulator, measured):
every redelivery's commit waits for it and is aborted (`Transaction lock timeout`). Those
redeliveries keep their own read locks while they retry, so when the dead lock expires they
block each other in turn, and a sender that keeps redelivering keeps the record locked for
good (measured: one event failing every delivery for 186 s, long after the dead lock expired).

An effect that only writes needs no transaction. Here the record is read without one, the
effect queues its writes on a `WriteBatch`, and the SUCCEEDED record goes in the same batch
with a precondition: created if there was none, else updated only if unchanged since the read.
The commit is atomic, so the effect happens exactly when the record says SUCCEEDED; of
concurrent deliveries one commit lands and the others' preconditions fail at once, and they
read the record again (DUPLICATE). Nothing is locked, so a consumer killed at any point holds
nothing back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from google.api_core import exceptions as google_exceptions

from firestore_outbox.consumer.inbox.records import InboxStatus, Records, Result, Verdict
from firestore_outbox.errors import OutboxError

if TYPE_CHECKING:
    from google.cloud.firestore import Client, DocumentReference, WriteBatch

T = TypeVar("T")
# Each lost race is another delivery's write landing first: its record then reads SUCCEEDED
# (or FAILED, counted), so a few rounds always settle it.
ROUNDS = 5


class RaceLost(OutboxError, google_exceptions.Aborted):
    """Other deliveries of the event kept writing its record first; retrying later settles it
    (an `Aborted`, so a consumer answers it as Firestore's failure: the sender retries)."""


def process_in_batch(
    db: Client,
    ref: DocumentReference,
    records: Records,
    key: tuple[str, str],
    effect: Callable[[WriteBatch], T],
    *,
    timeout: float,
    on_failure: Callable[[Exception], None],
    on_takeover: Callable[[], None],
) -> Result[T]:
    """Run `effect(batch)` and commit its writes with the SUCCEEDED record of the event `key`
    (source, id), unless the record says it succeeded, is parked or is in progress. An
    exception from `effect` is passed to `on_failure` (which records it) and re-raised.
    `on_takeover` hears a run that counted on a record whose consumer had died (a lease of
    `Inbox.process` that expired): applied, or failed."""
    source, event_id = key
    for _ in range(ROUNDS):
        snapshot = ref.get(timeout=timeout)
        blocked = records.blocked(snapshot)
        if blocked is not None:
            return blocked
        attempts, stuck = records.next_attempt(snapshot), records.stuck(snapshot)
        batch = db.batch()
        try:
            value = effect(batch)
        except Exception as exc:
            on_failure(exc)
            if stuck:
                on_takeover()
            raise
        fields = records.leased(source, event_id, attempts, new=not snapshot.exists)
        fields.update(records.settled(InboxStatus.SUCCEEDED))
        if snapshot.exists:
            option = db.write_option(last_update_time=snapshot.update_time)
            batch.update(ref, fields, option=option)
        else:
            batch.create(ref, fields)
        try:
            batch.commit(timeout=timeout)
        except (google_exceptions.AlreadyExists, google_exceptions.FailedPrecondition):
            continue  # another delivery wrote the record first: read what it wrote
        if stuck:
            on_takeover()
        return Result(Verdict.APPLIED, value, attempts)
    raise RaceLost(  # type: ignore[no-untyped-call]
        f"event {event_id}: other deliveries kept writing its inbox record first"
    )
