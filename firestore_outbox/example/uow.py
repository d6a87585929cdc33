"""`OrderUnitOfWork`: the library's unit of work with the order repository beside the
outbox's, so application code writes `uow.orders.add(...)` and `uow.outbox.add(...)`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from firestore_outbox.example.repository import OrderRepository
from firestore_outbox.producer import FirestoreUnitOfWork

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.producer import Settings

__all__ = ["OrderUnitOfWork"]


class OrderUnitOfWork(FirestoreUnitOfWork):
    """`firestore_outbox.FirestoreUnitOfWork` plus `uow.orders` (`ORDERS_COLLECTION`); the
    keyword options are the library's (`max_writes`, `max_batch_bytes`, `nudger`)."""

    def __init__(self, db: Client, settings: Settings | None = None, **options: Any) -> None:
        super().__init__(db, settings, **options)
        self.orders = OrderRepository(db, self.settings.orders_collection, uow=self)
