"""The HTTP order API: a plain WSGI app behind the Idempotency-Key middleware."""

from app.api.app import make_api, make_orders_app

__all__ = ["make_api", "make_orders_app"]
