"""The idempotent-consumer inbox: `Inbox(db, consumer).process(...)` or its decorators."""

from firestore_outbox.consumer.inbox.core import DEFAULT_INBOX_COLLECTION, Inbox
from firestore_outbox.consumer.inbox.records import (
    InboxStatus,
    LeaseLost,
    Result,
    Verdict,
    event_key,
)

__all__ = [
    "DEFAULT_INBOX_COLLECTION",
    "Inbox",
    "InboxStatus",
    "LeaseLost",
    "Result",
    "Verdict",
    "event_key",
]
