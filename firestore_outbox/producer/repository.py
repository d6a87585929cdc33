"""`OutboxRepository`: outbox events queued on a unit of work; `Repository`, the base an
application's own repositories (`app.repository.OrderRepository`) build on."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from google.cloud.firestore import SERVER_TIMESTAMP

from firestore_outbox.errors import InvalidInput
from firestore_outbox.fields import (
    AGGREGATE_ID,
    AGGREGATE_TYPE,
    ATTEMPTS,
    CREATED_AT,
    EVENT_ID,
    EVENT_TYPE,
    LAST_ERROR,
    NEXT_ATTEMPT_AT,
    PARTITION,
    PAYLOAD,
    PROCESSED_AT,
    PROCESSING_INSTANCE_ID,
    SEQUENCE,
    STATUS,
    UPDATED_AT,
    EventStatus,
)
from firestore_outbox.firestore.limits import (
    OUTBOX_HEADROOM_BYTES,
    check_document_id,
    json_value_problem,
    label_problem,
)
from firestore_outbox.observability.tracing import creation_context
from firestore_outbox.partitions import partition_of

if TYPE_CHECKING:
    from google.cloud.firestore import Client, DocumentReference


class UnitOfWork(Protocol):
    """What a repository queues on: `UnitOfWork` (defined in terms of its
    repositories, so named here by what it does, not imported)."""

    @property
    def pending_writes(self) -> int: ...

    def add_create(
        self,
        ref: DocumentReference,
        data: Mapping[str, Any],
        *,
        idempotency_field: str | None = None,
        headroom: int = 0,
    ) -> None: ...


def _collection_name(name: str | None, attribute: str) -> str:
    if name is not None:
        return name
    # A public edge given no collection: the process's configuration names it.
    from firestore_outbox.config.loader import Configuration

    return str(getattr(Configuration.default().settings, attribute))


def configured_partitions() -> int:
    """`RELAY_PARTITIONS` as the configuration says now: for a writer given no count (the
    writers and the relay must agree on it). Read at this public edge, once per repository."""
    from firestore_outbox.config.loader import Configuration

    return Configuration.load().partitions().count


def checked_id(value: str, what: str) -> str:
    problem = check_document_id(value)
    if problem:
        raise InvalidInput(f"{what} {problem}")
    return value


class Repository:
    """A collection's repository; bound to a unit of work when reached as `uow.orders` or
    `uow.outbox`, so `add` queues there without being handed the unit of work again."""

    _setting: str  # the Settings attribute naming the default collection

    def __init__(
        self,
        db: Client,
        collection: str | None = None,
        *,
        uow: UnitOfWork | None = None,
    ) -> None:
        self._collection = db.collection(_collection_name(collection, self._setting))
        self._uow = uow

    def _target(self, uow: UnitOfWork | None) -> UnitOfWork:
        """The unit of work an `add` queues on: the bound one, or the one passed."""
        if self._uow is None:
            if uow is None:
                raise TypeError(
                    "this repository is not bound to a unit of work: pass one, "
                    "or use the unit of work's own (uow.orders, uow.outbox)"
                )
            return uow
        if uow is not None:
            if uow is not self._uow:
                raise InvalidInput(
                    "this repository belongs to another unit of work than the one passed"
                )
            warnings.warn(
                "passing the unit of work to its own repository is deprecated: "
                "call uow.outbox.add(event) (or uow.orders.add(order))",
                DeprecationWarning,
                stacklevel=3,
            )
        return self._uow


class OutboxRepository(Repository):
    """Outbox events in `OUTBOX_COLLECTION`, spread over `partitions` (`RELAY_PARTITIONS`
    when not given); the document id is the event id."""

    _setting = "outbox_collection"

    def __init__(
        self,
        db: Client,
        collection: str | None = None,
        *,
        uow: UnitOfWork | None = None,
        partitions: int | None = None,
    ) -> None:
        super().__init__(db, collection, uow=uow)
        self._partitions = partitions

    def add(self, event_data: Mapping[str, Any], uow: UnitOfWork | None = None) -> str:
        """Queue a `PENDING` outbox event and return its id: `uow.outbox.add(event)`, or
        `OutboxRepository(db).add(event, uow)` for a repository of its own.

        `event_data` holds `eventType`, `aggregateType`, `aggregateId` and a JSON-compatible
        `payload`; `eventId` is optional and a random UUID otherwise. Ids and types must be
        valid UTF-8 without control characters (`label_problem`). The document must leave
        `OUTBOX_HEADROOM_BYTES` free under 1 MiB for the relay's fields, or `DocumentTooLarge`.
        """
        target = self._target(uow)
        event_id = str(event_data.get(EVENT_ID) or uuid.uuid4())
        names = (EVENT_TYPE, AGGREGATE_TYPE, AGGREGATE_ID)
        labels = {**{name: event_data.get(name) for name in names}, EVENT_ID: event_id}
        for name, value in labels.items():
            if problem := label_problem(value):
                raise InvalidInput(f"event {name} {problem}")
        payload = event_data.get(PAYLOAD)
        if not isinstance(payload, Mapping):
            raise InvalidInput(f"event payload must be a mapping, got {type(payload).__name__}")
        problem = json_value_problem(payload, "payload")
        if problem:
            raise InvalidInput(f"event {problem}")
        checked_id(event_id, "eventId")
        if self._partitions is None:
            self._partitions = configured_partitions()
        # The relay delivers one aggregate's events in (createdAt, sequence) order: the
        # commit time orders units of work, the position in this one orders its events.
        sequence = target.pending_writes
        target.add_create(
            self._collection.document(event_id),
            {
                EVENT_ID: event_id,
                EVENT_TYPE: event_data[EVENT_TYPE],
                AGGREGATE_TYPE: event_data[AGGREGATE_TYPE],
                AGGREGATE_ID: event_data[AGGREGATE_ID],
                PARTITION: partition_of(str(event_data[AGGREGATE_ID]), self._partitions),
                SEQUENCE: sequence,
                PAYLOAD: dict(payload),
                STATUS: EventStatus.PENDING.value,
                ATTEMPTS: 0,
                CREATED_AT: SERVER_TIMESTAMP,
                UPDATED_AT: SERVER_TIMESTAMP,
                # Due at once: the relay finds PENDING events by nextAttemptAt.
                NEXT_ATTEMPT_AT: SERVER_TIMESTAMP,
                PROCESSING_INSTANCE_ID: None,
                PROCESSED_AT: None,
                LAST_ERROR: None,
                # The creation trace context: the relay's publish span continues this trace.
                **creation_context(),
            },
            headroom=OUTBOX_HEADROOM_BYTES,
        )
        return event_id
