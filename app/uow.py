"""`FirestoreUnitOfWork`: the library's unit of work with the order repository beside the
outbox's, so application code writes `uow.orders.add(...)` and `uow.outbox.add(...)`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.repository import OrderRepository
from firestore_outbox.config.loader import Configuration
from firestore_outbox.firestore.limits import MAX_WRITES_PER_BATCH
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.producer.uow import FirestoreUnitOfWork as _LibraryUnitOfWork

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.nudge import Nudger

__all__ = ["FirestoreUnitOfWork"]


class FirestoreUnitOfWork(_LibraryUnitOfWork):
    """`firestore_outbox.FirestoreUnitOfWork` plus `uow.orders` (`ORDERS_COLLECTION`)."""

    def __init__(
        self,
        db: Client,
        settings: Settings | None = None,
        *,
        max_writes: int = MAX_WRITES_PER_BATCH,
        max_batch_bytes: int | None = None,
        nudger: Nudger | bool = True,
    ) -> None:
        settings = settings or Configuration.default().settings
        super().__init__(
            db, settings, max_writes=max_writes, max_batch_bytes=max_batch_bytes, nudger=nudger
        )
        self.orders = OrderRepository(db, settings.orders_collection, uow=self)
