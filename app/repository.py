"""`OrderRepository` (`firestore_outbox.example`'s) and the library's `OutboxRepository`."""

from firestore_outbox.example import OrderRepository
from firestore_outbox.producer import OutboxRepository

__all__ = ["OrderRepository", "OutboxRepository"]
