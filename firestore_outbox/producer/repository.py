"""`OutboxRepository`: outbox events queued on a unit of work; `Repository`, the base an
application's own repositories (`app.repository.OrderRepository`) build on."""

from __future__ import annotations

import uuid
import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from google.cloud.firestore import SERVER_TIMESTAMP

from firestore_outbox import edge
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
    from google.cloud.firestore import Client, CollectionReference, DocumentReference


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

    def add_set(
        self, ref: DocumentReference, data: Mapping[str, Any], merge: bool = False
    ) -> None: ...

    def add_update(self, ref: DocumentReference, data: Mapping[str, Any]) -> None: ...

    def add_delete(self, ref: DocumentReference) -> None: ...


def configured_partitions() -> int:
    """`RELAY_PARTITIONS` as the process's configuration says: for a writer given no count
    (the writers and the relay must agree on it). The environment is read once per process
    (`firestore_outbox.edge.default()`), never per unit of work or repository."""
    count: int = edge.default().partitions().count
    return count


def checked_id(value: str, what: str) -> str:
    problem = check_document_id(value)
    if problem:
        raise InvalidInput(f"{what} {problem}")
    return value


class Repository:
    """The base of a collection's repository, the outbox's and your own aggregates'.

    `Repository(db, "invoices")` works on its own; a subclass adds the methods its aggregate
    needs (`add`, `get`...) on three public pieces: `collection` (the Firestore collection),
    `unit_of_work(uow)` (where an `add` queues) and `document(id)` (a reference with a checked
    id). A subclass may name a `Settings` attribute in `collection_setting` to default the
    collection from the configuration (`OrderRepository`: `"orders_collection"`).

    Bound to a unit of work (`uow=`, as a unit of work's subclass does for `uow.invoices`),
    `add` queues there without being handed it again; unbound, the caller passes the unit of
    work: `InvoiceRepository(db).add(invoice, uow)`. See docs/concepts/your-aggregates.md.
    """

    #: The `Settings` attribute naming the default collection, or None: a name is required.
    collection_setting: ClassVar[str | None] = None

    def __init__(
        self,
        db: Client,
        collection: str | None = None,
        *,
        uow: UnitOfWork | None = None,
    ) -> None:
        self._collection = db.collection(self._collection_name(collection))
        self._uow = uow

    @property
    def collection(self) -> CollectionReference:
        """The Firestore collection this repository reads and queues writes in."""
        return self._collection

    @property
    def bound_unit_of_work(self) -> UnitOfWork | None:
        """The unit of work this repository belongs to (`uow.invoices`), or None."""
        return self._uow

    def document(self, document_id: str | None = None, *, what: str = "id") -> DocumentReference:
        """The reference of `document_id` in the collection (a new random id when None);
        an id Firestore would refuse raises `InvalidInput` naming it `what`."""
        if document_id is None:
            return self._collection.document()
        return self._collection.document(checked_id(document_id, what))

    def get(self, document_id: str) -> dict[str, Any] | None:
        """The stored document `document_id` as a dict, or None when it does not exist."""
        snapshot = self.document(document_id).get()
        return snapshot.to_dict() if snapshot.exists else None

    def unit_of_work(self, uow: UnitOfWork | None = None) -> UnitOfWork:
        """The unit of work an `add` queues on: the bound one, or `uow` (the one passed).

        Neither raises `TypeError`; a bound repository passed another unit of work raises
        `InvalidInput`; passed its own, it warns that the argument is redundant.
        """
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

    # Protected names a subclass may still override (docs/upgrading.md, 0.7): kept working.
    _target = unit_of_work

    def _collection_name(self, name: str | None) -> str:
        if name is not None:
            return name
        setting = self.collection_setting or getattr(self, "_setting", None)
        if setting is None:
            raise TypeError(
                f"{type(self).__name__} needs a collection name: "
                f'{type(self).__name__}(db, "invoices"), or a collection_setting'
            )
        # A public edge given no collection: the process's configuration names it.
        return str(getattr(edge.default().settings, setting))


class OutboxRepository(Repository):
    """Outbox events in `OUTBOX_COLLECTION`, spread over `partitions` (`RELAY_PARTITIONS`
    when not given); the document id is the event id."""

    collection_setting = "outbox_collection"

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
        target = self.unit_of_work(uow)
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
