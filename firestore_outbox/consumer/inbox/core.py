"""`Inbox`: an idempotent consumer on Firestore, so each event's effect happens once.

One record per (consumer, `ce-source`, `ce-id`) in `INBOX_COLLECTION` (default `inbox`):

    (none) --create--> PROCESSING --effect ok--> SUCCEEDED
                           |  \\--effect raised--> FAILED --next delivery--> PROCESSING ...
                           |                         \\--attempts reach the bound--> PARKED
                           \\--lease expired (the consumer died)--> taken over by the next delivery

An effect that only writes to Firestore should use `process_in_batch`: its writes and the
SUCCEEDED record commit in one batch with a precondition, nothing locked
(`firestore_outbox.consumer.inbox.batched`).
One that must also read uses `process_in_transaction`: reads, writes and the record in one
transaction (`firestore_outbox.consumer.inbox.transactional`). Either way the effect happens exactly
once. Any other effect (an e-mail, a payment API) uses `process`: the record is created PROCESSING
first (an atomic create: of two deliveries only one starts), the effect runs, and SUCCEEDED is
written conditionally on the lease. A consumer that dies mid-effect leaves a PROCESSING record whose
lease another delivery takes over once it has expired; that effect then runs again, so it should
carry the event id as its own idempotency key. Lease ages are measured on Firestore's clock (the
read time minus `leasedAt`), never on a consumer's.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from google.api_core import exceptions as google_exceptions

from firestore_outbox.consumer.inbox.batched import process_in_batch
from firestore_outbox.consumer.inbox.failures import logged_instead
from firestore_outbox.consumer.inbox.flights import Flights
from firestore_outbox.consumer.inbox.records import InboxStatus as Status
from firestore_outbox.consumer.inbox.records import (
    LeaseLost,
    Records,
    Result,
    Verdict,
    check_replays,
    event_key,
    event_trace,
)
from firestore_outbox.consumer.inbox.transactional import process_in_transaction
from firestore_outbox.consumer.inbox.writes import record_failure, write_if_unchanged
from firestore_outbox.consumer.metrics import record_heal
from firestore_outbox.errors import InvalidInput
from firestore_outbox.observability.tracing import process_span

if TYPE_CHECKING:
    from google.cloud.firestore import (
        Client,
        DocumentReference,
        DocumentSnapshot,
        Transaction,
        WriteBatch,
    )

DEFAULT_INBOX_COLLECTION = "inbox"
T = TypeVar("T")


class Inbox:
    """Deduplicates the deliveries `consumer` receives; see the module docstring.

    `lease_seconds` must outlast the longest effect; `max_attempts` failed or abandoned runs
    park an event; `retention` sets `expireAt` for a Firestore TTL policy, and must outlast
    every redelivery (a record deleted early lets a late duplicate through). `replays` says
    what the decorators do with a re-drive's delivery (marked `outboxreplay`): `"skip"`, the
    default, dedupes it like any delivery (an effect already applied is not repeated because
    an operator re-drove a type), `"again"` applies it once more, once per job (for a
    consumer rebuilding its data; docs/redrive.md). `timeout` bounds
    each read and write the inbox makes, retries included; a transaction's begin and commit
    keep the client library's own limit (60 s against a frozen emulator, as measured).
    """

    def __init__(
        self,
        db: Client,
        consumer: str,
        *,
        collection: str = DEFAULT_INBOX_COLLECTION,
        lease_seconds: float = 60.0,
        max_attempts: int = 5,
        retention: datetime.timedelta = datetime.timedelta(days=30),
        timeout: float = 10.0,
        replays: str = "skip",
    ) -> None:
        self.replays = check_replays(replays)
        if not consumer or not consumer.strip():
            raise InvalidInput("the inbox needs a consumer name")
        if lease_seconds <= 0 or max_attempts < 1:
            raise InvalidInput("lease_seconds must be > 0 and max_attempts >= 1")
        self._db = db
        self._timeout = timeout
        self._collection = db.collection(collection)
        self.consumer = consumer
        self._records = Records(
            consumer, datetime.timedelta(seconds=lease_seconds), max_attempts, retention
        )
        self._flights = Flights()

    def record(self, source: str, event_id: str) -> DocumentReference:
        """The record of one event: its id is a hash, as sources contain slashes."""
        if not source or not event_id:
            raise InvalidInput("an event needs a non-empty source and id")
        key = json.dumps([self.consumer, source, event_id]).encode()
        return self._collection.document(hashlib.sha256(key).hexdigest())

    def process(self, source: str, event_id: str, effect: Callable[[], T]) -> Result[T]:
        """Run `effect` unless this event already succeeded, is parked or is in progress.

        An exception from `effect` is recorded (FAILED, or PARKED at the bound) and re-raised;
        if recording it fails, that failure is logged and the effect's exception still raised.
        Raises `LeaseLost` if the effect outlived its lease and another delivery took over.
        """
        ref, records = self.record(source, event_id), self._records
        write = functools.partial(write_if_unchanged, self._db, timeout=self._timeout)
        try:
            first = records.leased(source, event_id, 1, new=True)
            leased_at = ref.create(first, timeout=self._timeout).update_time
            attempts = 1
        except google_exceptions.Conflict:
            snapshot = ref.get(timeout=self._timeout)
            if not snapshot.exists:  # deleted (TTL, an operator) since: start afresh
                return self.process(source, event_id, effect)
            blocked = records.blocked(snapshot)
            if blocked is not None:
                return blocked
            stuck, attempts = records.stuck(snapshot), records.next_attempt(snapshot)
            if attempts > records.max_attempts:
                parked = records.abandoned(snapshot)
                if write(ref, snapshot.update_time, parked) and stuck:
                    record_heal(self.consumer, "park")
                return Result(Verdict.PARKED, attempts=attempts - 1)
            takeover = records.leased(source, event_id, attempts, new=False)
            leased_at = write(ref, snapshot.update_time, takeover)
            if leased_at is None:  # another delivery took it first
                return Result(Verdict.IN_PROGRESS, attempts=attempts, retry_after=1.0)
            if stuck:
                record_heal(self.consumer, "takeover")
        try:
            value = effect()
        except Exception as exc:
            with logged_instead(event_id):
                write(ref, leased_at, records.failed(attempts, exc))
            raise
        if write(ref, leased_at, records.settled(Status.SUCCEEDED)) is None:
            raise LeaseLost(f"event {event_id}: the lease expired before the effect finished")
        return Result(Verdict.APPLIED, value, attempts)

    def process_in_transaction(
        self, source: str, event_id: str, effect: Callable[[Transaction], T]
    ) -> Result[T]:
        """Run `effect(transaction)` and record SUCCEEDED in the same Firestore transaction.

        `effect` must only read and write through `transaction`: on contention Firestore
        retries the whole transaction, so it may be called more than once, and only one call's
        writes commit. An exception from `effect` rolls its writes back, is recorded (FAILED,
        or PARKED at the bound) and re-raised. A Firestore error raised through `transaction`
        (an Aborted or Unavailable read) is Firestore's failure, not an attempt: Aborted runs
        the transaction again, anything else is raised uncounted.
        """
        return self._settled_with(  # type: ignore[no-any-return]
            process_in_transaction, source, event_id, effect, flights=self._flights
        )

    def process_in_batch(
        self, source: str, event_id: str, effect: Callable[[WriteBatch], T]
    ) -> Result[T]:
        """Run `effect(batch)` and commit its writes with the SUCCEEDED record in one batch,
        without a transaction: for an effect that only writes (no reads), and then better
        than `process_in_transaction`, as it locks nothing that a killed consumer could leave
        locked (`firestore_outbox.consumer.inbox.batched`). `effect` may be called more than once
        (another delivery wrote the record first); only one call's writes commit. An exception from
        `effect` is recorded (FAILED, or PARKED at the bound) and re-raised."""
        return self._settled_with(process_in_batch, source, event_id, effect)  # type: ignore[no-any-return]

    def _settled_with(
        self, path: Callable[..., Any], source: str, event_id: str, effect: Any, **more: Any
    ) -> Any:
        """Run an effect through `path` (`firestore_outbox.consumer.inbox.transactional` or
        `.batched`), which
        commits its writes with the SUCCEEDED record, with this inbox's record, timeout and
        hooks: a failure recorded, a takeover counted."""
        ref = self.record(source, event_id)

        def failed(exc: Exception) -> None:
            with logged_instead(event_id):
                record_failure(
                    self._db, ref, self._records, (source, event_id), exc, timeout=self._timeout
                )

        return path(
            self._db,
            ref,
            self._records,
            (source, event_id),
            effect,
            timeout=self._timeout,
            on_failure=failed,
            on_takeover=lambda: record_heal(self.consumer, "takeover"),
            **more,
        )

    def idempotent(self, effect: Callable[[Any], T]) -> Callable[[Any], Result[T]]:
        """Decorator: `effect(event)` runs through `process`, keyed by the event's source
        and id (a `cloudevents` event, or a mapping with `source` and `id`), in a CONSUMER
        span continuing the trace its `traceparent` names
        (`firestore_outbox.observability.tracing.process_span`)."""

        def wrapper(event: Any) -> Result[T]:
            source, event_id = event_key(event, replays=self.replays)
            with process_span(event_trace(event), consumer=self.consumer, event_id=event_id):
                return self.process(source, event_id, lambda: effect(event))

        return wrapper

    def idempotent_in_transaction(
        self, effect: Callable[[Any, Transaction], T]
    ) -> Callable[[Any], Result[T]]:
        """Decorator: `effect(event, transaction)` runs through `process_in_transaction`."""

        def wrapper(event: Any) -> Result[T]:
            source, event_id = event_key(event, replays=self.replays)
            with process_span(event_trace(event), consumer=self.consumer, event_id=event_id):
                return self.process_in_transaction(
                    source, event_id, lambda transaction: effect(event, transaction)
                )

        return wrapper

    def get(self, source: str, event_id: str) -> DocumentSnapshot[Any]:
        """The record of one event as it stands (for operators and tests)."""
        return self.record(source, event_id).get(timeout=self._timeout)
