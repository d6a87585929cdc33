"""Reading one outbox document whole, for `outbox inspect`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.errors import InvalidInput
from app.firestore_limits import check_document_id

if TYPE_CHECKING:
    from google.cloud.firestore import Client


def event_document(db: Client, collection: str, event_id: str) -> dict[str, Any] | None:
    """The event's fields plus its `_createTime` and `_updateTime`; None if there is none."""
    problem = check_document_id(event_id)
    if problem:
        raise InvalidInput(f"EVENT_ID {problem}")
    snapshot = db.collection(collection).document(event_id).get()
    if not snapshot.exists:
        return None
    return {
        **(snapshot.to_dict() or {}),
        "_createTime": snapshot.create_time,
        "_updateTime": snapshot.update_time,
    }
