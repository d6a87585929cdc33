"""`FirestoreUnitOfWork`: queued writes committed as one Firestore `WriteBatch`."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import Enum
from types import TracebackType
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions

from app.config import Settings, default_settings
from app.errors import (
    BatchTooLarge,
    CommitFailed,
    DocumentAlreadyExists,
    DocumentTooLarge,
    IdempotencyConflict,
    InvalidInput,
    UnitOfWorkClosed,
)
from app.firestore_limits import (
    EMULATOR_MAX_REQUEST_BYTES,
    MAX_DOCUMENT_BYTES,
    MAX_REQUEST_BYTES,
    MAX_WRITES_PER_BATCH,
    REQUEST_ENVELOPE_BYTES,
    document_size,
)
from app.repository import OrderRepository, OutboxRepository

if TYPE_CHECKING:
    from google.cloud.firestore import Client, DocumentReference, WriteBatch

logger = logging.getLogger(__name__)


class _State(Enum):
    OPEN = "open"
    COMMITTED = "committed"
    DISCARDED = "discarded"
    FAILED = "failed"


@dataclass(frozen=True)
class _Write:
    op: str
    ref: DocumentReference
    # A shallow copy: deep-copying would clone sentinels such as SERVER_TIMESTAMP, which the
    # client recognises by identity.
    data: dict[str, Any] = field(default_factory=dict)
    merge: bool = False
    idempotency_field: str | None = None

    def apply(self, batch: WriteBatch) -> None:
        if self.op == "create":
            batch.create(self.ref, self.data)
        elif self.op == "set":
            batch.set(self.ref, self.data, merge=self.merge)
        elif self.op == "update":
            batch.update(self.ref, self.data)
        else:
            batch.delete(self.ref)


class FirestoreUnitOfWork:
    """Collects writes and commits them atomically in one `WriteBatch`.

    As a context manager it commits on a clean exit and discards everything when an exception
    leaves the block; `commit()` commits explicitly, once. A batch Firestore would reject fails
    with an `InvalidInput` before it is sent, and nothing is written: a document over 1 MiB or
    more than `max_writes` writes as they are added, more than `max_batch_bytes` of encoded
    request at commit (default 10 MiB, or 4 MiB when `db` talks to the emulator).
    """

    def __init__(
        self,
        db: Client,
        settings: Settings | None = None,
        *,
        max_writes: int = MAX_WRITES_PER_BATCH,
        max_batch_bytes: int | None = None,
    ) -> None:
        settings = settings or default_settings()
        self.db = db
        self.orders = OrderRepository(db, settings.orders_collection)
        self.outbox = OutboxRepository(db, settings.outbox_collection)
        self._max_writes = max_writes
        if max_batch_bytes is None:
            on_emulator = getattr(db, "_emulator_host", None)
            max_batch_bytes = EMULATOR_MAX_REQUEST_BYTES if on_emulator else MAX_REQUEST_BYTES
        self._max_batch_bytes = max_batch_bytes
        self._writes: list[_Write] = []
        self._state = _State.OPEN
        self._replayed = False

    def __enter__(self) -> FirestoreUnitOfWork:
        self._ensure_open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._state is not _State.OPEN:
            return
        if exc_type is None:
            self.commit()
        else:
            logger.debug("discarding %d queued writes after %s", len(self._writes), exc_type)
            self._writes.clear()
            self._state = _State.DISCARDED

    @property
    def pending_writes(self) -> int:
        """Number of writes queued and not yet committed."""
        return len(self._writes)

    @property
    def replayed(self) -> bool:
        """True when the commit found every guarded create already done by an earlier commit."""
        return self._replayed

    def add_create(
        self,
        ref: DocumentReference,
        data: Mapping[str, Any],
        *,
        idempotency_field: str | None = None,
    ) -> None:
        """Queue a create, which fails the whole batch if the document exists.

        With `idempotency_field`, an existing document whose field holds the same value counts
        as this very write done before: if every such create in the batch is found that way,
        the commit writes nothing and reports `replayed`; a different value raises
        `IdempotencyConflict`.
        """
        self._add(_Write("create", ref, dict(data), False, idempotency_field))

    def add_set(self, ref: DocumentReference, data: Mapping[str, Any], merge: bool = False) -> None:
        self._add(_Write("set", ref, dict(data), merge))

    def add_update(self, ref: DocumentReference, data: Mapping[str, Any]) -> None:
        # Only the written fields are known here, so only they are measured.
        self._add(_Write("update", ref, dict(data)))

    def add_delete(self, ref: DocumentReference) -> None:
        self._add(_Write("delete", ref))

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """Writes queued inside the block are dropped again if an exception leaves it."""
        mark = len(self._writes)
        try:
            yield
        except BaseException:
            if self._state is _State.OPEN:
                del self._writes[mark:]
            raise

    def commit(self) -> None:
        """Commit every queued write in one batch; raise `CommitFailed` if Firestore refuses."""
        self._ensure_open()
        writes, self._writes = self._writes, []
        self._state = _State.FAILED
        batch = self.db.batch()
        for write in writes:
            try:
                write.apply(batch)
            except (ValueError, TypeError) as exc:  # the client refused to encode the data
                raise InvalidInput(f"cannot write {write.ref.path}: {exc}") from exc
        size = _request_size(batch, writes)
        if size > self._max_batch_bytes:
            raise BatchTooLarge(
                f"the batch would be {size} bytes; the limit is {self._max_batch_bytes}"
            )
        try:
            if writes:
                batch.commit()
        except google_exceptions.AlreadyExists as exc:
            if not self._is_replay(writes):
                raise DocumentAlreadyExists(f"Firestore rejected the batch: {exc.message}") from exc
            logger.info("batch of %d writes was already committed earlier", len(writes))
            self._replayed = True
        except google_exceptions.GoogleAPIError as exc:
            raise CommitFailed(f"Firestore rejected the batch: {exc}") from exc
        self._state = _State.COMMITTED
        logger.debug("committed %d writes", len(writes))

    def _is_replay(self, writes: list[_Write]) -> bool:
        guarded = [w for w in writes if w.op == "create" and w.idempotency_field]
        if not guarded:
            return False
        try:
            snapshots = {s.reference.path: s for s in self.db.get_all([w.ref for w in guarded])}
        except google_exceptions.GoogleAPIError as exc:
            raise CommitFailed(f"could not read back a rejected batch: {exc}") from exc
        found = 0
        for write in guarded:
            snapshot = snapshots.get(write.ref.path)
            if snapshot is None or not snapshot.exists:
                continue
            guard = str(write.idempotency_field)
            if snapshot.get(guard) != write.data.get(guard):
                raise IdempotencyConflict(
                    f"{write.ref.path} already exists with a different {guard}: "
                    "the idempotency key was reused with different arguments"
                )
            found += 1
        # Some guarded documents missing means the clash came from another write.
        return found == len(guarded)

    def _add(self, write: _Write) -> None:
        self._ensure_open()
        if write.op != "delete":
            size = document_size(write.ref.path, write.data)
            if size > MAX_DOCUMENT_BYTES:
                raise DocumentTooLarge(
                    f"document {write.ref.path} would be {size} bytes; Firestore's limit is "
                    f"{MAX_DOCUMENT_BYTES}"
                )
        if len(self._writes) >= self._max_writes:
            raise BatchTooLarge(f"a unit of work holds at most {self._max_writes} writes")
        self._writes.append(write)

    def _ensure_open(self) -> None:
        if self._state is not _State.OPEN:
            raise UnitOfWorkClosed(f"this unit of work is already {self._state.value}")


def _request_size(batch: Any, writes: list[_Write]) -> int:
    """Bytes the commit will send: the encoded writes the client built, plus the envelope."""
    encoded = getattr(batch, "_write_pbs", None)  # google-cloud-firestore's WriteBatch
    if encoded is None:  # an in-memory fake: estimate with the storage-size formula
        return sum(document_size(w.ref.path, w.data) for w in writes)
    return REQUEST_ENVELOPE_BYTES + sum(int(type(pb).pb(pb).ByteSize()) for pb in encoded)
