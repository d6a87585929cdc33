"""`FirestoreUnitOfWork`: queued writes committed as one Firestore `WriteBatch`."""

from __future__ import annotations

import datetime
import logging
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from enum import Enum
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from firestore_outbox import edge
from firestore_outbox.errors import BatchTooLarge, DocumentTooLarge, InvalidInput, UnitOfWorkClosed
from firestore_outbox.firestore.limits import (
    EMULATOR_MAX_REQUEST_BYTES,
    MAX_DOCUMENT_BYTES,
    MAX_REQUEST_BYTES,
    MAX_WRITES_PER_BATCH,
    document_size,
)
from firestore_outbox.firestore.raw import emulator_host
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.nudge import Nudger, nudge_committed
from firestore_outbox.producer.batch import Write, build_batch, request_size
from firestore_outbox.producer.commits import COMMIT_TOKEN_FIELD, Landing, send
from firestore_outbox.producer.defaults import nudger_for
from firestore_outbox.producer.repository import OutboxRepository

if TYPE_CHECKING:
    from google.cloud.firestore import Client, DocumentReference

logger = logging.getLogger(__name__)

_Self = TypeVar("_Self", bound="FirestoreUnitOfWork")


class _State(Enum):
    OPEN = "open"
    COMMITTED = "committed"
    DISCARDED = "discarded"
    FAILED = "failed"


class FirestoreUnitOfWork:
    """Collects writes and commits them atomically in one `WriteBatch`.

    As a context manager it commits on a clean exit and discards everything when an exception
    leaves the block; `commit()` commits explicitly, once. A batch Firestore would reject fails
    with an `InvalidInput` before it is sent, and nothing is written: a document over 1 MiB or
    more than `max_writes` writes as they are added, more than `max_batch_bytes` of encoded
    request at commit (default 10 MiB, or 4 MiB when `db` talks to the emulator).

    After a commit that wrote outbox events, the relay is nudged to deliver them now when
    `OUTBOX_NUDGE` says so (or through `nudger`; `False`: never). Without `settings` (or
    `partitions`), the process's configuration names them (`firestore_outbox.edge.default()`:
    the environment, `RELAY_PARTITIONS` among it, read once per process). The nudge is queued for a
    background sender: it never fails or slows the commit.

    Every document it creates carries its commit token (field `commitToken`), so that a commit
    whose answer was lost can be read back: see `firestore_outbox.producer.commits`. `commit()` then
    reports the batch committed, raises `CommitFailed` when nothing was written, or
    `CommitOutcomeUnknown`.

    Your own aggregates' repositories hang off a subclass, bound to it (the whole contract):

        class BillingUnitOfWork(FirestoreUnitOfWork):
            def __init__(self, db, settings=None, **options):
                super().__init__(db, settings, **options)
                self.invoices = InvoiceRepository(db, "invoices", uow=self)

    where `InvoiceRepository` subclasses `Repository` (docs/concepts/your-aggregates.md).
    """

    def __init__(
        self,
        db: Client,
        settings: Settings | None = None,
        *,
        max_writes: int = MAX_WRITES_PER_BATCH,
        max_batch_bytes: int | None = None,
        nudger: Nudger | bool = True,
        partitions: int | None = None,
    ) -> None:
        if settings is None:  # the public edge: the process's configuration, read once
            settings = edge.default().settings
        self.db = db
        self.outbox = OutboxRepository(
            db, settings.outbox_collection, uow=self, partitions=partitions
        )
        self._settings = settings
        self._max_writes = max_writes
        if max_batch_bytes is None:
            on_emulator = emulator_host(db)
            max_batch_bytes = EMULATOR_MAX_REQUEST_BYTES if on_emulator else MAX_REQUEST_BYTES
        self._max_batch_bytes = max_batch_bytes
        self._writes: list[Write] = []
        self._state = _State.OPEN
        self._replayed = False
        self._token = uuid.uuid4().hex
        # True: the process's nudger for OUTBOX_NUDGE (firestore_outbox.nudge); False: none.
        self._nudger = nudger

    @property
    def settings(self) -> Settings:
        """The settings this unit of work writes by (collections, Firestore timeout)."""
        return self._settings

    def __enter__(self: _Self) -> _Self:
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
        headroom: int = 0,
    ) -> None:
        """Queue a create, which fails the whole batch if the document exists.

        With `idempotency_field`, an existing document whose field holds the same value counts
        as this very write done before: if every such create in the batch is found that way,
        the commit writes nothing and reports `replayed`; a different value raises
        `IdempotencyConflict`. `headroom` bytes are kept free under the 1 MiB limit for fields
        written later (`DocumentTooLarge` otherwise). The document gets a `commitToken` field.
        """
        if COMMIT_TOKEN_FIELD in data:
            raise InvalidInput(f"{COMMIT_TOKEN_FIELD} is written by the unit of work, not by you")
        fields = {**data, COMMIT_TOKEN_FIELD: self._token}
        self._add(Write("create", ref, fields, False, idempotency_field), headroom)

    def add_set(self, ref: DocumentReference, data: Mapping[str, Any], merge: bool = False) -> None:
        self._add(Write("set", ref, dict(data), merge))

    def add_update(
        self,
        ref: DocumentReference,
        data: Mapping[str, Any],
        *,
        last_update_time: datetime.datetime | None = None,
    ) -> None:
        """Queue an update; with `last_update_time` the whole batch fails (`CommitFailed`)
        unless the document was last updated at that time."""
        # Only the written fields are known here, so only they are measured.
        self._add(Write("update", ref, dict(data), last_update_time=last_update_time))

    def add_delete(self, ref: DocumentReference) -> None:
        self._add(Write("delete", ref))

    def queued_creates(self, collection: str) -> list[str]:
        """Ids of the documents queued for creation in `collection`, in order: for example
        the event id `create_new_order` queued in the outbox."""
        return [
            w.ref.id for w in self._writes if w.op == "create" and w.ref.parent.id == collection
        ]

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
        """Commit every queued write in one batch; raise `CommitFailed` if Firestore refuses
        (nothing written), `CommitOutcomeUnknown` if it cannot be told whether it landed."""
        self._ensure_open()
        writes, self._writes = self._writes, []
        self._state = _State.FAILED
        batch = build_batch(self.db, writes)
        size = request_size(batch, writes)
        if size > self._max_batch_bytes:
            raise BatchTooLarge(
                f"the batch would be {size} bytes; the limit is {self._max_batch_bytes}"
            )
        landing = send(self.db, writes, self._token, self._settings) if writes else Landing.LANDED
        self._replayed = landing is Landing.REPLAYED
        if self._replayed:
            logger.info("batch of %d writes was already committed earlier", len(writes))
        self._state = _State.COMMITTED
        logger.debug("committed %d writes", len(writes))
        if not self._replayed and self._nudger is not False:
            nudger = self._nudger if isinstance(self._nudger, Nudger) else self._shared_nudger
            nudge_committed(nudger, self._settings, writes)

    def _shared_nudger(self) -> Nudger | None:
        """The process's nudger for `OUTBOX_NUDGE`: the configuration is read at this public
        edge, once per process (`firestore_outbox.producer.defaults.nudger_for`)."""
        return nudger_for(self.db, self._settings)

    def _add(self, write: Write, headroom: int = 0) -> None:
        self._ensure_open()
        if write.op != "delete":
            try:
                size = document_size(write.ref.path, write.data)
            except UnicodeEncodeError as exc:  # Firestore stores text as UTF-8
                raise InvalidInput(
                    f"document {write.ref.path} holds a lone surrogate, which UTF-8 cannot carry"
                ) from exc
            if size + headroom > MAX_DOCUMENT_BYTES:
                kept = f" plus a headroom of {headroom} for fields added later" if headroom else ""
                raise DocumentTooLarge(
                    f"document {write.ref.path} would be {size} bytes{kept}; Firestore's "
                    f"limit is {MAX_DOCUMENT_BYTES}"
                )
        if len(self._writes) >= self._max_writes:
            raise BatchTooLarge(f"a unit of work holds at most {self._max_writes} writes")
        self._writes.append(write)

    def _ensure_open(self) -> None:
        if self._state is not _State.OPEN:
            raise UnitOfWorkClosed(f"this unit of work is already {self._state.value}")
