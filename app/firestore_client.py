"""`get_db_client()`: the library's Firestore client factory, under the name the design card
gives it (`firestore_outbox.firestore.client` holds it)."""

from firestore_outbox.firestore.client import get_db_client

__all__ = ["get_db_client"]
