"""`OrderRepository`: orders queued on a unit of work; the outbox's repository is the
library's (`firestore_outbox.OutboxRepository`), importable from here as before."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from firestore_outbox.example.orders import REQUEST_HASH_FIELD
from firestore_outbox.producer import (
    FirestoreUnitOfWork,
    OutboxRepository,
    Repository,
    checked_id,
)

__all__ = ["OrderRepository", "OutboxRepository"]


class OrderRepository(Repository):
    """Orders in `ORDERS_COLLECTION`."""

    _setting = "orders_collection"

    def add(
        self,
        order_data: Mapping[str, Any],
        uow: FirestoreUnitOfWork | None = None,
        *,
        order_id: str | None = None,
    ) -> str:
        """Queue the creation of an order and return its id (`order_id` or a new one).

        An order carrying `requestHash` is guarded: committing it again is a replay, not a
        duplicate (see `FirestoreUnitOfWork.add_create`).
        """
        target = self._target(uow)
        ref = self._collection.document(checked_id(order_id, "order_id") if order_id else None)
        guard = REQUEST_HASH_FIELD if order_data.get(REQUEST_HASH_FIELD) else None
        target.add_create(ref, order_data, idempotency_field=guard)
        return str(ref.id)

    def get(self, order_id: str) -> dict[str, Any] | None:
        snapshot = self._collection.document(checked_id(order_id, "order_id")).get()
        return snapshot.to_dict() if snapshot.exists else None
