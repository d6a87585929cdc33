"""Use cases. Plain functions whose last positional argument is the unit of work."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import SERVER_TIMESTAMP

from firestore_outbox.example.orders import NewOrder

if TYPE_CHECKING:
    from firestore_outbox.example.uow import OrderUnitOfWork

logger = logging.getLogger(__name__)


def create_new_order(
    customer_id: str,
    items: Sequence[Mapping[str, Any]],
    uow: OrderUnitOfWork,
    *,
    idempotency_key: str | None = None,
) -> str:
    """Queue an order and its `OrderCreated` outbox event on `uow`; return the order id.

    Both land in the same batch when `uow` commits, or neither does. Invalid arguments raise
    `InvalidOrder` (a `ValueError`) before anything is queued. With `idempotency_key` the
    order id is derived from the key, so repeating the call with the same arguments returns
    the same id and its commit writes nothing (`uow.replayed`); the same key with other
    arguments makes the commit raise `IdempotencyConflict`.
    """
    order = NewOrder.parse(customer_id, items, idempotency_key)
    with uow.savepoint():
        order_id = uow.orders.add(order.document(SERVER_TIMESTAMP), order_id=order.order_id)
        event_id = uow.outbox.add(order.created_event(order_id))
    logger.debug("queued order %s with %d items and event %s", order_id, len(order.items), event_id)
    return order_id
