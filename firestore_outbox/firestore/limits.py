"""Firestore's data rules and size formula, checked locally so bad data fails before a commit.

Sizes follow Firestore's documented storage-size formula (strings are UTF-8 bytes + 1, numbers
and timestamps 8, a document adds its name size and 32 bytes). The probes behind the nesting
rules were run on the emulator: maps nest 20 deep, an array may not hold an array directly.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping
from typing import Any

from google.cloud.firestore_v1 import DocumentReference, GeoPoint
from google.cloud.firestore_v1.transforms import Sentinel

MAX_DOCUMENT_BYTES = 1_048_576
MAX_REQUEST_BYTES = 10 * 1024 * 1024
# The emulator's gRPC server refuses messages over 4 MiB (seen: "gRPC message exceeds maximum
# size 4194304"), and the client then retries that refusal for 60 seconds.
EMULATOR_MAX_REQUEST_BYTES = 4 * 1024 * 1024
# Room for the rest of the CommitRequest (database name, framing) beside the writes.
REQUEST_ENVELOPE_BYTES = 1024
MAX_WRITES_PER_BATCH = 500
# Bytes an outbox document keeps free at `add` for the fields the relay writes later, so that
# no lease, retry or settle write can push it over 1 MiB (which would stall the relay on it).
# At their widest today they take about 2.7 KiB: lastError (500 characters, up to 2,000 bytes
# of UTF-8), processingInstanceId (128 characters, up to 512 bytes), status, attempts and five
# timestamps (updatedAt, nextAttemptAt, leasedAt, processedAt, expireAt), names included. The
# rest of 16 KiB is for fields to come: partition and ordering keys, the creation trace
# context (traceparent 55 bytes, tracestate up to 512), and whatever else a relay needs.
OUTBOX_HEADROOM_BYTES = 16 * 1024
MAX_NESTING_DEPTH = 20
MAX_NAME_BYTES = 1500
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_RESERVED_NAME = re.compile(r"^__.*__$", re.DOTALL)


def utf8_problem(text: str) -> str | None:
    """Return why `text` cannot be stored or sent (it has no UTF-8 form), or None."""
    try:
        text.encode()
    except UnicodeEncodeError as exc:
        return f"holds a lone surrogate at index {exc.start}, which UTF-8 cannot carry"
    return None


def check_collection_id(value: object) -> str | None:
    """Return why `value` is not a valid collection or document id, or None if it is."""
    if not isinstance(value, str) or not value:
        return "must be a non-empty string"
    if problem := utf8_problem(value):
        return problem
    if "/" in value or value in (".", ".."):
        return f"must not contain '/' or be '.' or '..', got {value!r}"
    if _RESERVED_NAME.match(value):
        return f"must not match __.*__ (reserved by Firestore), got {value!r}"
    if len(value.encode()) > MAX_NAME_BYTES:
        return f"must be at most {MAX_NAME_BYTES} bytes"
    return None


check_document_id = check_collection_id


def json_value_problem(value: object, where: str, depth: int = 0) -> str | None:
    """Return why `value` is not a JSON-compatible value Firestore can store, or None.

    JSON-compatible means None, bool, int (64-bit), finite float, str, list and dict with
    string keys; `where` names the value in the message, e.g. ``items[0].price``.
    """
    if depth > MAX_NESTING_DEPTH:
        return f"{where} is nested deeper than {MAX_NESTING_DEPTH} levels"
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, str):
        problem = utf8_problem(value)
        return f"{where} {problem}" if problem else None
    if isinstance(value, int):
        if INT64_MIN <= value <= INT64_MAX:
            return None
        return f"{where} is outside the 64-bit integer range"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{where} must be a finite number"
    if isinstance(value, (list, tuple)):
        for index, element in enumerate(value):
            if isinstance(element, (list, tuple)):
                return f"{where}[{index}] is an array directly inside an array"
            problem = json_value_problem(element, f"{where}[{index}]", depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, Mapping):
        for key, element in value.items():
            if not isinstance(key, str) or not key:
                return f"{where} has a key {key!r} that is not a non-empty string"
            if problem := utf8_problem(key):
                return f"{where} has a key {key!r} that {problem}"
            if _RESERVED_NAME.match(key) or len(key.encode()) > MAX_NAME_BYTES:
                return f"{where} has a key {key!r} that Firestore does not accept as a field name"
            problem = json_value_problem(element, f"{where}.{key}", depth + 1)
            if problem:
                return problem
        return None
    return f"{where} has type {type(value).__name__}, which is not JSON-compatible"


def value_size(value: Any) -> int:
    """Storage size of one field value in bytes, by Firestore's documented formula."""
    if value is None or isinstance(value, bool):
        return 1
    if isinstance(value, (int, float, dt.datetime, Sentinel)):
        # Sentinels (SERVER_TIMESTAMP) become timestamps on the server.
        return 8
    if isinstance(value, str):
        return len(value.encode()) + 1
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, GeoPoint):
        return 16
    if isinstance(value, DocumentReference):
        return name_size(value.path)
    if isinstance(value, (list, tuple)):
        return sum(value_size(element) for element in value)
    if isinstance(value, Mapping):
        return sum(len(str(key).encode()) + 1 + value_size(v) for key, v in value.items())
    raise TypeError(f"cannot size a value of type {type(value).__name__}")


def name_size(path: str) -> int:
    """Storage size of a document name such as ``orders/abc``."""
    return sum(len(segment.encode()) + 1 for segment in path.split("/")) + 16


def document_size(path: str, data: Mapping[str, Any]) -> int:
    """Storage size of the document at `path` holding `data`."""
    return name_size(path) + value_size(data) + 32


# Unicode's control characters (category Cc). Header percent-encoding could carry them, but in
# an id or a type they are never meant: they break log lines and terminal output, and a
# consumer comparing ids would have to agree on an encoding first.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def label_problem(value: object) -> str | None:
    """Why `value` cannot be an id or a type (an `eventId`, `eventType`,
    `aggregateType` or `aggregateId`, or an application's own id), or None: it must be a non-empty
    string of valid UTF-8 (any Unicode beyond Latin-1 travels) with no control character."""
    if not isinstance(value, str) or not value.strip():
        return f"must be a non-empty string, got {value!r}"
    if problem := utf8_problem(value):
        return problem
    control = _CONTROL.search(value)
    if control:
        return f"must not hold control characters, got U+{ord(control.group()):04X}"
    return None
