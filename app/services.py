"""Use cases: `create_new_order(customer_id, items, uow, *, idempotency_key=None) -> str`
(`firestore_outbox.example`'s)."""

from firestore_outbox.example import create_new_order

__all__ = ["create_new_order"]
