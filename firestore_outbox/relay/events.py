"""An outbox document read back for delivery: checked field by field, payload encoded once."""

from __future__ import annotations

import base64
import datetime
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.cloud.firestore import DocumentReference, GeoPoint

from firestore_outbox.fields import (
    AGGREGATE_ID,
    AGGREGATE_TYPE,
    ATTEMPTS,
    CREATED_AT,
    EVENT_ID,
    EVENT_TYPE,
    PAYLOAD,
)
from firestore_outbox.observability.trace_context import TRACEPARENT, TRACESTATE, trace_fields


class PoisonEvent(Exception):
    """An outbox document that can never be delivered as it is; the message says why."""


@dataclass(frozen=True)
class OutboxEvent:
    event_id: str
    event_type: str
    aggregate_type: str
    aggregate_id: str
    created_at: datetime.datetime
    attempts: int
    body: bytes  # the payload as JSON, exactly the bytes sent downstream
    # The creation trace context (`firestore_outbox.observability.tracing`), when valid; a bad one
    # is dropped, not poison.
    traceparent: str | None = None
    tracestate: str | None = None

    @classmethod
    def from_document(cls, document_id: str, data: Mapping[str, Any]) -> OutboxEvent:
        """Check an outbox document; raise `PoisonEvent` naming the first flaw."""
        event_id = data.get(EVENT_ID)
        if event_id != document_id:
            raise PoisonEvent(f"eventId must equal the document id, got {_short(event_id)}")
        strings = {}
        for name in (EVENT_TYPE, AGGREGATE_TYPE, AGGREGATE_ID):
            value = data.get(name)
            if not isinstance(value, str) or not value.strip():
                raise PoisonEvent(f"{name} must be a non-empty string, got {_short(value)}")
            strings[name] = value
        created_at = data.get(CREATED_AT)
        if not isinstance(created_at, datetime.datetime):
            raise PoisonEvent(f"createdAt must be a timestamp, got {_short(created_at)}")
        attempts = whole_number(data.get(ATTEMPTS))
        if attempts is None or attempts < 0:
            raise PoisonEvent(
                f"attempts must be a whole number >= 0, got {_short(data.get('attempts'))}"
            )
        payload = data.get(PAYLOAD)
        if not isinstance(payload, Mapping):
            raise PoisonEvent(f"payload must be a map, got {type(payload).__name__}")
        try:
            body = encode_json(payload)
        except (TypeError, ValueError) as exc:
            raise PoisonEvent(f"payload cannot be encoded as JSON: {exc}") from exc
        trace = trace_fields(data)
        return cls(
            event_id=event_id,
            event_type=strings[EVENT_TYPE],
            aggregate_type=strings[AGGREGATE_TYPE],
            aggregate_id=strings[AGGREGATE_ID],
            created_at=created_at,
            attempts=attempts,
            body=body,
            traceparent=trace.get(TRACEPARENT),
            tracestate=trace.get(TRACESTATE),
        )


def whole_number(value: Any) -> int | None:
    """`value` as an int when it is a whole number: another producer's SDK (JavaScript's, for
    one) may store `0` as the double `0.0`. None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def encode_json(value: Any, *, indent: int | None = None) -> bytes:
    """JSON for a Firestore value: timestamps as RFC 3339, bytes as base64, geopoints as
    `{latitude, longitude}`, references as their path. NaN and infinities are refused.
    Compact unless `indent` is given."""
    text = json.dumps(
        value,
        default=_firestore_value,
        allow_nan=False,
        ensure_ascii=False,
        separators=(",", ":") if indent is None else None,
        indent=indent,
        sort_keys=indent is not None,
    )
    return text.encode()


def rfc3339(moment: datetime.datetime) -> str:
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    text = moment.astimezone(datetime.timezone.utc).isoformat(timespec="microseconds")
    return text.replace("+00:00", "Z")


def _firestore_value(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return rfc3339(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, GeoPoint):
        return {"latitude": value.latitude, "longitude": value.longitude}
    if isinstance(value, DocumentReference):
        return str(value.path)
    if isinstance(value, Sequence) and not isinstance(value, str):  # e.g. a Vector
        return list(value)
    raise TypeError(f"{type(value).__name__} is not a Firestore value")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
