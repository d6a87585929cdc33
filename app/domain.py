"""The order and its `OrderCreated` event (`firestore_outbox.example`'s)."""

from firestore_outbox.example import (
    ORDER_AGGREGATE,
    ORDER_CREATED,
    InvalidOrder,
    NewOrder,
    OrderStatus,
)
from firestore_outbox.fields import EventStatus

__all__ = [
    "ORDER_AGGREGATE",
    "ORDER_CREATED",
    "EventStatus",
    "InvalidOrder",
    "NewOrder",
    "OrderStatus",
]
