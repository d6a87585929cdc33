"""The OpenTelemetry SDK's private span internals that the relay's publish span relies on for
speed, in one place, pinned by tests/unit/observability/test_telemetry_sdk.py.

The SDK cleans every attribute a span is started with (`BoundedAttributes`: type checks and a
copy per value, a fifth of a publish span's CPU, `bench/tracing_breakdown.py`). The relay's
attributes are strings and an int it built itself, four of them the same on every span:
`span_starter` writes them straight into the started span's attribute dict, which is what the
SDK does with them once it has cleaned them. Only where the outcome is the same as the public
`start_span(..., attributes=...)`: the tracer is the SDK's own, its sampler one of the SDK's
own, which decide without reading attributes and hand them on unchanged to a span they sample
(so they need not be given at the start), no attribute limit could drop or cut one, and every
span processor is the SDK's own (they read nothing on a span's start; a processor of the
app's own could, and would see the span before its attributes). Anything else (another SDK,
a custom sampler or processor, limits set, an SDK whose span keeps its attributes elsewhere)
takes the public path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Tracer
from opentelemetry.util.types import AttributeValue

# (context, event id, attempt) -> a started PRODUCER span
Starter = Callable[[Context, str, int], Span]

MESSAGE_ID = "messaging.message.id"
ATTEMPT = "firestore_outbox.attempt"

# The SDK's samplers that decide on the trace id and the parent alone and pass the
# attributes they were given on to the span (AlwaysRecordSampler does not: it records a
# dropped span without them). Named, not found by module, so that a sampler a later SDK adds
# takes the public path until it is read and added here.
_ATTRIBUTE_BLIND = frozenset(
    {
        "StaticSampler",
        "TraceIdRatioBased",
        "ParentBased",
        "ParentBasedTraceIdRatio",
        "_AlwaysOn",
        "_AlwaysOff",
        "_ParentBasedAlwaysOn",
        "_ParentBasedAlwaysOff",
    }
)
# ParentBased's delegates (private attributes of the SDK's class).
_DELEGATES = (
    "_root",
    "_remote_parent_sampled",
    "_remote_parent_not_sampled",
    "_local_parent_sampled",
    "_local_parent_not_sampled",
)


def span_starter(tracer: Tracer, name: str, shared: Mapping[str, AttributeValue]) -> Starter:
    """Start a PRODUCER span `name` with the attributes `shared` plus the attempt's message id
    and number: directly when `tracer` allows it (the module docstring), else in public."""
    every = dict(shared)

    def public(context: Context, event_id: str, attempt: int) -> Span:
        attributes = {**every, MESSAGE_ID: event_id, ATTEMPT: attempt}
        return tracer.start_span(
            name, context=context, kind=SpanKind.PRODUCER, attributes=attributes
        )

    if not _direct_allowed(tracer, len(every) + 2):
        return public

    processors = getattr(tracer, "span_processor", None)  # the SDK Tracer's, public in name
    checked: list[object] = [None, False]  # the processors tuple last checked, its verdict

    def direct(context: Context, event_id: str, attempt: int) -> Span:
        # The provider swaps in a new tuple when a processor is added: check it once per tuple.
        current = getattr(processors, "_span_processors", None)
        if current is not checked[0]:
            checked[:] = [current, _sdk_processors(current)]
        if not checked[1]:
            return public(context, event_id, attempt)
        span = tracer.start_span(name, context=context, kind=SpanKind.PRODUCER)
        attributes = getattr(span, "_attributes", None)  # none: sampled out, not recording
        written = getattr(attributes, "_dict", None)
        if isinstance(written, dict):
            written.update(every)
            written[MESSAGE_ID] = event_id
            written[ATTEMPT] = attempt
        elif span.is_recording():  # an SDK that keeps them elsewhere: the public way
            span.set_attributes({**every, MESSAGE_ID: event_id, ATTEMPT: attempt})
        return span

    return direct


def _direct_allowed(tracer: Tracer, attributes: int) -> bool:
    try:
        from opentelemetry.sdk.trace import Tracer as SdkTracer
    except ImportError:  # another SDK's provider
        return False
    if type(tracer) is not SdkTracer:
        return False
    limits = getattr(tracer, "_span_limits", None)
    if limits is None or limits.max_span_attribute_length is not None:
        return False
    if limits.max_span_attributes is not None and limits.max_span_attributes < attributes:
        return False
    return _blind(getattr(tracer, "sampler", None))


def _sdk_processors(processors: object) -> bool:
    """Whether every processor in the tuple, and in any of the SDK's multi-processors among
    them, is one of the SDK's own."""
    if not isinstance(processors, tuple):
        return False
    return all(
        type(p).__module__.startswith("opentelemetry.sdk.")
        and (not hasattr(p, "_span_processors") or _sdk_processors(p._span_processors))
        for p in processors
    )


def _blind(sampler: object) -> bool:
    if sampler is None or type(sampler).__module__ != "opentelemetry.sdk.trace.sampling":
        return False
    if type(sampler).__name__ not in _ATTRIBUTE_BLIND:
        return False
    return all(_blind(getattr(sampler, name)) for name in _DELEGATES if hasattr(sampler, name))
