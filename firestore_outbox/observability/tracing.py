"""One trace from the commit to the consumer, with OpenTelemetry (the API only: a no-op until
the application, or `firestore_outbox.observability.telemetry`, installs an SDK).

- `creation_context()`: the current trace context as W3C `traceparent`/`tracestate`, which
  `uow.outbox.add` stores on the event document (its creation context).
- the relay's PRODUCER span per attempt, a child of that stored context:
  `firestore_outbox.observability.publish_spans`.
- `process_span()`: a consumer's CONSUMER span, a child of what the delivery carried.
- `server_span()`: the order API's SERVER span for `POST /orders`, where the trace starts.

Trace context read from a document or a request is untrusted: anything that is not a valid W3C
`traceparent` is dropped (the event is delivered without it, never refused for it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.util.types import AttributeValue

from firestore_outbox.observability.publish_spans import (  # the relay's attempts import them here
    PublishSpans as PublishSpans,
)
from firestore_outbox.observability.publish_spans import messaging_system as messaging_system
from firestore_outbox.observability.publish_spans import publish_span as publish_span
from firestore_outbox.observability.publish_spans import record_outcome as record_outcome
from firestore_outbox.observability.span_context import remote_parent
from firestore_outbox.observability.trace_context import (
    TRACE_FIELDS,
    TRACEPARENT,
    TRACESTATE,
    trace_fields,
)

__all__ = ["TRACEPARENT", "TRACESTATE", "TRACE_FIELDS", "creation_context", "trace_fields"]

_propagator = TraceContextTextMapPropagator()
_tracer = trace.get_tracer("firestore-outbox")


def creation_context() -> dict[str, str]:
    """The current span's context as `traceparent`/`tracestate`; empty when no span is
    recording (no SDK, or outside any span), so nothing is stored."""
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return trace_fields(carrier)


@contextmanager
def process_span(
    carrier: Mapping[str, Any], *, consumer: str, event_id: str | None = None
) -> Iterator[Span]:
    """A CONSUMER span processing one delivery, child of the trace context it carried (none:
    a new trace). `consumer` is the consumer group (the inbox's consumer name)."""
    parent = _propagator.extract(trace_fields(carrier))
    attributes: dict[str, str] = {
        "messaging.operation.name": "process",
        "messaging.operation.type": "process",
        "messaging.consumer.group.name": consumer,
    }
    if event_id:
        attributes["messaging.message.id"] = event_id
    with _tracer.start_as_current_span(
        "process", context=parent, kind=SpanKind.CONSUMER, attributes=attributes
    ) as span:
        yield span


@contextmanager
def server_span(environ: Mapping[str, Any], method: str, route: str) -> Iterator[Span]:
    """A SERVER span for one WSGI request, child of the caller's W3C trace context (its
    `traceparent`/`tracestate` headers), per the HTTP conventions: `POST /orders`."""
    carrier = {name: environ.get(f"HTTP_{name.upper()}") for name in TRACE_FIELDS}
    attributes: dict[str, AttributeValue] = {"http.request.method": method, "http.route": route}
    with _tracer.start_as_current_span(
        f"{method} {route}",
        context=remote_parent(carrier),
        kind=SpanKind.SERVER,
        attributes=attributes,
    ) as span:
        yield span


def record_answer(span: Span, status: int) -> None:
    """Mark a consumer span with the HTTP status it answered; a 5xx is an error (retried)."""
    if not span.is_recording():
        return
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_attribute("error.type", str(status))
        span.set_status(Status(StatusCode.ERROR))
