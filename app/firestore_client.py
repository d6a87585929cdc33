"""`get_db_client()`: the library's Firestore client factory, under the name the design card
gives it."""

from firestore_outbox import get_db_client

__all__ = ["get_db_client"]
