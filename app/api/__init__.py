"""The HTTP order API: a plain WSGI app behind the Idempotency-Key middleware
(`firestore_outbox.example`'s)."""

from firestore_outbox.example import make_api, make_orders_app

__all__ = ["make_api", "make_orders_app"]
