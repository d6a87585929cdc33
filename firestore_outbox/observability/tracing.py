"""One trace from the commit to the consumer, with OpenTelemetry (the API only: a no-op until
the application, or `firestore_outbox.observability.telemetry`, installs an SDK).

- `creation_context()`: the current trace context as W3C `traceparent`/`tracestate`, which
  `uow.outbox.add` stores on the event document (its creation context).
- `PublishSpans.span()` (`publish_span()`): the relay's PRODUCER span, a child of that stored
  context, named and attributed per the OpenTelemetry messaging conventions
  (`send <destination>`); the delivery carries the span's own context (the CloudEvents
  distributed-tracing extension).
- `process_span()`: a consumer's CONSUMER span, a child of what the delivery carried.
- `server_span()`: the order API's SERVER span for `POST /orders`, where the trace starts.

Trace context read from a document or a request is untrusted: anything that is not a valid W3C
`traceparent` is dropped (the event is delivered without it, never refused for it).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as context_api
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import (
    INVALID_SPAN,
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from opentelemetry.trace.span import DEFAULT_TRACE_STATE
from opentelemetry.util.types import AttributeValue

from firestore_outbox.observability.trace_context import (
    TRACE_FIELDS,
    TRACEPARENT,
    TRACESTATE,
    trace_fields,
)

__all__ = ["TRACEPARENT", "TRACESTATE", "TRACE_FIELDS", "creation_context", "trace_fields"]

_propagator = TraceContextTextMapPropagator()
_tracer = trace.get_tracer("firestore-outbox")

# The relay's publishers as `messaging.system`: the conventions' well-known value where one
# exists (RabbitMQ speaks AMQP 0-9-1, RocketMQ), the RELAY_PUBLISHER name otherwise.
_SYSTEMS = {"amqp": "rabbitmq", "rocketmq": "rocketmq"}
_MESSAGE_ID = "messaging.message.id"
_ATTEMPT = "firestore_outbox.attempt"
# (context, event id, attempt) -> a started PRODUCER span
_Starter = Callable[[Context, str, int], Span]


def creation_context() -> dict[str, str]:
    """The current span's context as `traceparent`/`tracestate`; empty when no span is
    recording (no SDK, or outside any span), so nothing is stored."""
    carrier: dict[str, str] = {}
    _propagator.inject(carrier)
    return trace_fields(carrier)


def messaging_system(publisher: str) -> str:
    """`messaging.system` for a RELAY_PUBLISHER name."""
    return _SYSTEMS.get(publisher, publisher)


class PublishSpans:
    """The relay's PRODUCER spans to one destination: the name and the attributes that every
    attempt shares are built once, not once per attempt."""

    def __init__(self, system: str, destination: str) -> None:
        self._name = f"send {destination}" if destination else "send"
        self._attributes: dict[str, AttributeValue] = {
            "messaging.system": system,
            "messaging.destination.name": destination,
            "messaging.operation.name": "send",
            "messaging.operation.type": "send",
        }
        self._start: _Starter | None = None

    def _sdk_starter(self) -> _Starter | None:
        """How to start a span on the installed provider's own tracer, once there is one (a
        provider is set once per process), rather than on the API's proxy, which forwards
        every call to it."""
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider):
            return None
        tracer, name, shared = provider.get_tracer("firestore-outbox"), self._name, self._attributes

        # The public `start_span(attributes=...)`: writing the attributes into the SDK span's
        # private dict saved 4.0 us of 16.4 per attempt (tracing_breakdown.py's pieces, 7
        # rounds, 2026-11-28), about 0.5% of the relay's 750 us of CPU per event, and only
        # with the SDK installed: not worth reaching into the SDK (issue 34).
        def start(context: Context, event_id: str, attempt: int) -> Span:
            attributes = {**shared, _MESSAGE_ID: event_id, _ATTEMPT: attempt}
            return tracer.start_span(
                name, context=context, kind=SpanKind.PRODUCER, attributes=attributes
            )

        self._start = start
        return start

    def span(self, event_id: str, created: Mapping[str, Any], attempt: int) -> _Attempt:
        """A PRODUCER span for one delivery attempt, child of the event's creation context
        `created`; as a context manager, yields the span and the trace fields the delivery
        must carry, the span current meanwhile (an instrumented HTTP client's span is its
        child)."""
        start = self._start or self._sdk_starter()
        if start is None:
            # No SDK: no span of our own, nothing parsed or built. The stored context passes
            # on as it is, so that a traced consumer still joins the producer's trace.
            return _Attempt(INVALID_SPAN, current=False, carried=_stored(created))
        return _Attempt(start(_remote_parent(created), event_id, attempt), current=True)


class _Attempt:
    """`PublishSpans.span`'s context manager: a class, not `start_as_current_span`'s three
    nested generators, as it runs once per delivery attempt."""

    __slots__ = ("_carried", "_current", "_span", "_token")

    def __init__(self, span: Span, *, current: bool, carried: dict[str, str] | None = None) -> None:
        self._span, self._current, self._carried = span, current, carried
        self._token: object = None

    def __enter__(self) -> tuple[Span, dict[str, str]]:
        if not self._current:
            return self._span, self._carried or {}
        self._token = context_api.attach(trace.set_span_in_context(self._span))
        return self._span, _carried(self._span.get_span_context())

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _: Any) -> None:
        if not self._current:
            return
        context_api.detach(self._token)  # type: ignore[arg-type]
        if isinstance(exc, Exception):  # as `use_span` does: the span says why it ended
            self._span.record_exception(exc)
            self._span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        self._span.end()


def publish_span(
    system: str, destination: str, event_id: str, created: Mapping[str, Any], attempt: int
) -> _Attempt:
    """One attempt's PRODUCER span (`PublishSpans.span`), for a caller without a
    `PublishSpans` of its own."""
    return PublishSpans(system, destination).span(event_id, created, attempt)


# Formatted and parsed here rather than by the propagator: this runs once per delivery
# attempt, and the propagator's generic carrier handling was a third of the span's cost.
_ROOT = Context()


def _remote_parent(created: Mapping[str, Any]) -> Context:
    """The context of a stored creation context; a new trace's root when there is none."""
    fields = _stored(created)
    if not fields:
        return _ROOT
    header = fields[TRACEPARENT]  # 00-<trace id>-<span id>-<flags>, checked by `_stored`
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


def _stored(created: Mapping[str, Any]) -> dict[str, str]:
    """The valid W3C fields of a stored creation context: an all-zero id is none."""
    fields = trace_fields(created)
    header = fields.get(TRACEPARENT)
    if header is None or header[3:35] == _NO_TRACE_ID or header[36:52] == _NO_SPAN_ID:
        return {}
    return fields


def _carried(context: SpanContext) -> dict[str, str]:
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


def record_outcome(span: Span, outcome: str, error_type: str | None) -> None:
    """Mark the publish span of an attempt not delivered (`error_type` set): its outcome,
    `error.type` and error status. A delivered attempt's span is left as it is: no error
    status means delivered, and one attribute less is written per delivery."""
    if error_type is None or not span.is_recording():
        return
    span.set_attributes({"firestore_outbox.outcome": outcome, "error.type": error_type})
    span.set_status(Status(StatusCode.ERROR))


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
        context=_remote_parent(carrier),
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
