"""W3C trace context to and from OpenTelemetry span contexts, formatted and parsed here rather
than by the propagator: this runs once per delivery attempt, and the propagator's generic
carrier handling was a third of the span's cost.

- `stored_context(created)`: the valid fields of a stored creation context (an all-zero id is
  none);
- `remote_parent(created)`: the OpenTelemetry context whose parent they name (a new trace's
  root when there is none);
- `carried_fields(span_context)`: the `traceparent`/`tracestate` a delivery carries for a span.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, TraceState
from opentelemetry.trace.span import DEFAULT_TRACE_STATE

from firestore_outbox.observability.trace_context import TRACEPARENT, TRACESTATE, trace_fields

__all__ = ["carried_fields", "remote_parent", "stored_context"]

_ROOT = Context()


def remote_parent(created: Mapping[str, Any]) -> Context:
    """The context of a stored creation context; a new trace's root when there is none."""
    fields = stored_context(created)
    if not fields:
        return _ROOT
    header = fields[TRACEPARENT]  # 00-<trace id>-<span id>-<flags>, checked by `stored_context`
    state = TraceState.from_header([fields[TRACESTATE]]) if TRACESTATE in fields else None
    parent = SpanContext(
        int(header[3:35], 16),
        int(header[36:52], 16),
        is_remote=True,
        trace_flags=TraceFlags(int(header[53:55], 16)),
        trace_state=state,
    )
    return trace.set_span_in_context(NonRecordingSpan(parent), _ROOT)


_NO_TRACE_ID, _NO_SPAN_ID = "0" * 32, "0" * 16


def stored_context(created: Mapping[str, Any]) -> dict[str, str]:
    """The valid W3C fields of a stored creation context: an all-zero id is none."""
    fields = trace_fields(created)
    header = fields.get(TRACEPARENT)
    if header is None or header[3:35] == _NO_TRACE_ID or header[36:52] == _NO_SPAN_ID:
        return {}
    return fields


def carried_fields(context: SpanContext) -> dict[str, str]:
    """The delivery's `traceparent`/`tracestate` for a span context, as the W3C propagator
    writes them. A `SpanContext` is the tuple its properties read; unpacked at once, not
    property by property (half this function's instructions went to the properties)."""
    trace_id, span_id, _, flags, state, valid = context
    if not valid:
        return {}
    # %-formatting: half the CPU of the f-string's three format specs.
    carried = {TRACEPARENT: "00-%032x-%016x-%02x" % (trace_id, span_id, flags)}  # noqa: UP031
    # Most have none: the shared empty state, told by identity before asking its length.
    if state is not DEFAULT_TRACE_STATE and state:
        carried[TRACESTATE] = state.to_header()
    return carried
