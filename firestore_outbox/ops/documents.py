"""Reading one outbox document whole, for `outbox inspect`."""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from google.cloud.firestore import DocumentReference, GeoPoint

from firestore_outbox.errors import InvalidInput
from firestore_outbox.firestore.limits import check_document_id

if TYPE_CHECKING:
    from google.cloud.firestore import Client


def event_document(db: Client, collection: str, event_id: str) -> dict[str, Any] | None:
    """The event's fields plus its `_createTime` and `_updateTime`; None if there is none.

    Every value is one JSON can print (see `printable`): an operator inspects exactly the
    documents that hold something unexpected, so none may crash the command."""
    problem = check_document_id(event_id)
    if problem:
        raise InvalidInput(f"EVENT_ID {problem}")
    snapshot = db.collection(collection).document(event_id).get()
    if not snapshot.exists:
        return None
    return {
        **printable(snapshot.to_dict() or {}),
        "_createTime": snapshot.create_time,
        "_updateTime": snapshot.update_time,
    }


_AS_THEY_ARE = (str, bytes, bool, int, datetime.datetime, GeoPoint, DocumentReference)


def printable(value: Any) -> Any:
    """`value` with what JSON cannot hold made text: NaN and the infinities as "NaN",
    "Infinity" and "-Infinity" (their names in JavaScript), vectors as lists, and any value
    of a type not known here as its `str`. Timestamps, bytes, geopoints and references stay
    as they are for the JSON encoder."""
    if value is None or isinstance(value, _AS_THEY_ARE):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, Mapping):
        return {str(key): printable(element) for key, element in value.items()}
    if isinstance(value, Sequence):  # arrays and vectors
        return [printable(element) for element in value]
    return str(value)
