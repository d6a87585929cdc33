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
)

__all__ = ["OrderRepository", "OutboxRepository"]


class OrderRepository(Repository):
    """Orders in `ORDERS_COLLECTION`, on the library's public `Repository` contract; `get`
    (the stored order or None) is the base's."""

    collection_setting = "orders_collection"

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
        target = self.unit_of_work(uow)
        ref = self.document(order_id or None, what="order_id")
        guard = REQUEST_HASH_FIELD if order_data.get(REQUEST_HASH_FIELD) else None
        target.add_create(ref, order_data, idempotency_field=guard)
        return str(ref.id)
