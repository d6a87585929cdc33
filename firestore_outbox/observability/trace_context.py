"""W3C trace context fields as carried by outbox documents and deliveries. Standard library
only, so `firestore_outbox.consumer.events` can use it and still be copied alone (with this
file)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
TRACE_FIELDS = (TRACEPARENT, TRACESTATE)
# W3C Trace Context: version 00's 55 characters; a tracestate of at most 512 characters (what
# the recommendation says a vendor should keep). Anything else is dropped, never cut.
_TRACEPARENT = re.compile(r"00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")
_MAX_TRACESTATE = 512


def trace_fields(carrier: Mapping[str, Any]) -> dict[str, str]:
    """The valid `traceparent` (and its `tracestate`) of `carrier`; empty if it has none."""
    parent = carrier.get(TRACEPARENT)
    if not isinstance(parent, str) or not _TRACEPARENT.fullmatch(parent):
        return {}
    fields = {TRACEPARENT: parent}
    state = carrier.get(TRACESTATE)
    if isinstance(state, str) and state and len(state) <= _MAX_TRACESTATE:
        fields[TRACESTATE] = state
    return fields
