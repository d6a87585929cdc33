"""The idempotent-consumer inbox: `Inbox(db, consumer).process(...)` or its decorators."""

from app.inbox.core import DEFAULT_INBOX_COLLECTION, Inbox
from app.inbox.records import InboxStatus, LeaseLost, Result, Verdict, event_key

__all__ = [
    "DEFAULT_INBOX_COLLECTION",
    "Inbox",
    "InboxStatus",
    "LeaseLost",
    "Result",
    "Verdict",
    "event_key",
]
