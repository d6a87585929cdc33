"""The key registry in Firestore: the insert is the lock, the business batch completes it.

One document per (tenant, key), id `record_id(tenant, key)`. Its timeline:

    create {PROCESSING, fingerprint, lockId, lockedAt}   -> this request holds the lock
      (nothing is read first: an atomic create fails with ALREADY_EXISTS if the key is known)
    ALREADY_EXISTS, then one read:
      expireAt passed (Firestore's clock)                 -> taken over: a new first request
      another fingerprint                                 -> Mismatch (422)
      COMPLETED                                           -> Replay of the stored answer
      PROCESSING, lockedAt + lock timeout passed          -> taken over (the holder died)
      PROCESSING                                          -> InProgress (409, Retry-After)
    the holder's business batch updates it to COMPLETED with the precondition "last updated
      when I locked it": a holder whose lock was taken over cannot complete; its batch,
      order and event included, is refused whole
    a failure before the commit deletes it, with the same precondition: retrying is safe

Takeovers are compare-and-set writes on the update time read (`firestore_outbox.firestore.cas`), so
of two requests taking over one dead lock exactly one wins. "Passed" is judged with
`ServerClock.earliest()`, never the server's wall clock, so a fast local clock cannot take over a
live lock.
"""

from __future__ import annotations

import datetime
import logging
import time
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.cloud.firestore import SERVER_TIMESTAMP

from firestore_outbox.errors import CommitFailed
from firestore_outbox.firestore.cas import Change, WriteOutcome, write_if_unchanged
from firestore_outbox.firestore.clock import ClockNotSet, ServerClock
from firestore_outbox.firestore.deadline import bounded_retry
from firestore_outbox.idempotency.answers import FrontDoorAnswer, replayed, stored_fields

if TYPE_CHECKING:
    from google.cloud.firestore import Client, DocumentReference

    from firestore_outbox.idempotency.config import IdempotencyConfig
    from firestore_outbox.producer.uow import FirestoreUnitOfWork

logger = logging.getLogger(__name__)

PROCESSING = "PROCESSING"
COMPLETED = "COMPLETED"


@dataclass(frozen=True)
class Lock:
    """This request holds the key: `update_time` is the lock write's, the precondition of
    its completion or release."""

    record_id: str
    ref: DocumentReference
    update_time: datetime.datetime
    taken_over: bool = False


@dataclass(frozen=True)
class Replay:
    answer: FrontDoorAnswer


@dataclass(frozen=True)
class InProgress:
    retry_after: int


@dataclass(frozen=True)
class Mismatch:
    """The key was first used for another request."""


Begun = Lock | Replay | InProgress | Mismatch


class KeyRegistry:
    """Idempotency records in Firestore; thread-safe, one per process."""

    def __init__(self, db: Client, config: IdempotencyConfig, *, timeout: float) -> None:
        self._db = db
        self.config = config
        self._timeout = timeout
        self._collection = db.collection(config.collection)
        self.clock = ServerClock()

    def begin(self, record_id: str, fingerprint: str) -> Begun:
        """Lock the key for this request, or say why not (one create; on a clash one read)."""
        ref = self._collection.document(record_id)
        lock_id = uuid.uuid4().hex
        fields = self._lock_fields(fingerprint, lock_id)
        for _ in range(3):  # a record released between our create and read: create again
            sent = time.monotonic()
            try:
                result = ref.create(fields, retry=self._retry(), timeout=self._timeout)
            except google_exceptions.AlreadyExists:
                pass
            else:
                self.clock.observe(result.update_time, sent)
                return Lock(record_id, ref, result.update_time)
            sent = time.monotonic()
            snapshot = ref.get(retry=self._retry(), timeout=self._timeout)
            self.clock.observe(snapshot.read_time, sent)
            data = snapshot.to_dict()
            if data is not None:
                return self._known(record_id, ref, snapshot.update_time, data, fields)
        return InProgress(retry_after=1)

    def _known(
        self,
        record_id: str,
        ref: DocumentReference,
        update_time: datetime.datetime,
        data: dict[str, Any],
        fields: dict[str, Any],
    ) -> Begun:
        if data.get("lockId") == fields["lockId"]:  # our create landed; its answer was lost
            return Lock(record_id, ref, update_time)
        now = self.clock.earliest()
        expire_at = data.get("expireAt")
        if isinstance(expire_at, datetime.datetime) and expire_at <= now:
            return self._take_over(record_id, ref, update_time, fields)
        if data.get("fingerprint") != fields["fingerprint"]:
            return Mismatch()
        if data.get("status") == COMPLETED:
            return Replay(replayed(data["response"], record_id, self.config.encryption))
        locked_at = data.get("lockedAt")
        bound = datetime.timedelta(seconds=self.config.lock_timeout_seconds)
        if isinstance(locked_at, datetime.datetime) and locked_at + bound <= now:
            return self._take_over(record_id, ref, update_time, fields)
        return InProgress(retry_after=1)

    def _take_over(
        self,
        record_id: str,
        ref: DocumentReference,
        update_time: datetime.datetime,
        fields: dict[str, Any],
    ) -> Begun:
        [written] = write_if_unchanged(
            self._db, [Change(ref, update_time, fields)], retry=self._retry(), timeout=self._timeout
        )
        if written.applied and written.update_time is not None:
            logger.info("took over idempotency record %s", record_id)
            return Lock(record_id, ref, written.update_time, taken_over=True)
        if written.outcome is WriteOutcome.REFUSED:
            raise CommitFailed(f"taking over idempotency record {record_id}: {written.reason}")
        return InProgress(retry_after=1)  # another request took it over first

    def complete_in(self, uow: FirestoreUnitOfWork, lock: Lock, answer: FrontDoorAnswer) -> None:
        """Queue the completion on `uow`: it commits with the business writes, or not at all."""
        uow.add_update(lock.ref, self._completion(lock, answer), last_update_time=lock.update_time)

    def complete(self, lock: Lock, answer: FrontDoorAnswer) -> bool:
        """Store `answer` on its own (an endpoint without a batch); False if the lock was lost."""
        change = Change(lock.ref, lock.update_time, self._completion(lock, answer))
        [written] = write_if_unchanged(
            self._db, [change], retry=self._retry(), timeout=self._timeout
        )
        return written.applied

    def release(self, lock: Lock) -> None:
        """Forget the key, unless the lock was lost or completed meanwhile: a retry runs anew."""
        change = Change(lock.ref, lock.update_time, None)
        try:
            write_if_unchanged(self._db, [change], retry=self._retry(), timeout=self._timeout)
        except google_exceptions.GoogleAPIError:
            # The lock then expires after the lock timeout; a retry before gets 409.
            logger.warning("could not release idempotency record %s", lock.record_id)

    @staticmethod
    def lost(exc: CommitFailed) -> bool:
        """Whether a refused business batch was refused for the lock's precondition."""
        return isinstance(exc.__cause__, google_exceptions.FailedPrecondition)

    def _completion(self, lock: Lock, answer: FrontDoorAnswer) -> dict[str, Any]:
        config = self.config
        response = stored_fields(
            answer, lock.record_id, config.max_response_bytes, config.encryption
        )
        ttl = datetime.timedelta(seconds=config.ttl_seconds)
        return {
            "status": COMPLETED,
            "response": response,
            "completedAt": SERVER_TIMESTAMP,
            "expireAt": lock.update_time + ttl,
        }

    def _lock_fields(self, fingerprint: str, lock_id: str) -> dict[str, Any]:
        try:
            now = self.clock.latest()
        except ClockNotSet:  # the first request of this process: the local clock, once
            now = datetime.datetime.now(datetime.timezone.utc)
        return {
            "status": PROCESSING,
            "fingerprint": fingerprint,
            "lockId": lock_id,
            "lockedAt": SERVER_TIMESTAMP,
            # For a TTL policy; completion rewrites it from the lock's commit time.
            "expireAt": now + datetime.timedelta(seconds=self.config.ttl_seconds),
            "response": None,
            "completedAt": None,
        }

    def _retry(self) -> Any:
        return bounded_retry(self._timeout)
