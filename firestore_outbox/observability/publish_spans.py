"""The relay's PRODUCER spans, one per delivery attempt, with OpenTelemetry (the API only: a
no-op until an SDK is installed).

`PublishSpans(system, destination).span(event_id, created, attempt)` (`publish_span()` for a
caller without one) starts a child of the event's stored creation context, named and attributed
per the OpenTelemetry messaging conventions (`send <destination>`); the delivery carries the
span's own context (the CloudEvents distributed-tracing extension). `record_outcome` marks an
attempt that was not delivered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import context as context_api
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import INVALID_SPAN, Span, SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from firestore_outbox.observability.span_context import (
    carried_fields,
    remote_parent,
    stored_context,
)

__all__ = ["PublishSpans", "messaging_system", "publish_span", "record_outcome"]

# The relay's publishers as `messaging.system`: the conventions' well-known value where one
# exists (RabbitMQ speaks AMQP 0-9-1, RocketMQ), the RELAY_PUBLISHER name otherwise.
_SYSTEMS = {"amqp": "rabbitmq", "rocketmq": "rocketmq"}
_MESSAGE_ID = "messaging.message.id"
_ATTEMPT = "firestore_outbox.attempt"
# (context, event id, attempt) -> a started PRODUCER span
_Starter = Callable[[Context, str, int], Span]


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
        # private dict saves too little to reach into the SDK for (docs/performance.md).
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
            return _Attempt(INVALID_SPAN, current=False, carried=stored_context(created))
        return _Attempt(start(remote_parent(created), event_id, attempt), current=True)


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
        return self._span, carried_fields(self._span.get_span_context())

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


def record_outcome(span: Span, outcome: str, error_type: str | None) -> None:
    """Mark the publish span of an attempt not delivered (`error_type` set): its outcome,
    `error.type` and error status. A delivered attempt's span is left as it is: no error
    status means delivered, and one attribute less is written per delivery."""
    if error_type is None or not span.is_recording():
        return
    span.set_attributes({"firestore_outbox.outcome": outcome, "error.type": error_type})
    span.set_status(Status(StatusCode.ERROR))
