"""The OpenTelemetry SDK's private span internals that the relay's publish span relies on for
speed, in one place, pinned by tests/unit/test_telemetry_sdk.py.

The SDK cleans every attribute a span is started with (`BoundedAttributes`: type checks and a
copy per value, a fifth of a publish span's CPU, `bench/tracing_breakdown.py`). The relay's
attributes are strings and an int it built itself, four of them the same on every span:
`SpanStarter` writes them straight into the started span's attribute dict, which is what the
SDK does with them once it has cleaned them. Only where the outcome is the same as the public
`start_span(..., attributes=...)`: the tracer is the SDK's own, its sampler one of the SDK's
own, which decide without reading attributes and hand them on unchanged to a span they sample
(so they need not be given at the start), no attribute limit could drop or cut one, and every
span processor is the SDK's own (they read nothing on a span's start; a processor of the
app's own could, and would see the span before its attributes). Anything else (another SDK,
a custom sampler or processor, limits set, an SDK whose span keeps its attributes elsewhere)
takes the public path.

On that path a span may also start ahead of its publish (`SpanStarter.ahead`): the relay
starts a batch's spans one after another on the thread that hands the batch out, where each
costs about a third of one started alone on a publishing thread just woken from its wait
(the SDK's code and data are still in the CPU's caches), and `begin` sets the span's start
time (the SDK span's `_start_time`) when its publish begins. Nothing sees a span in between:
the SDK's own processors do nothing when a span starts, and the SDK's count of live spans
(its own metrics) turns starting ahead off.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, cast

from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Tracer
from opentelemetry.util.types import AttributeValue

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


class SpanStarter:
    """Starts PRODUCER spans `name` with the attributes `shared` plus an attempt's message id
    and number: directly when the tracer allows it (the module docstring), else in public.
    Called as `starter(context, event_id, attempt)`."""

    def __init__(self, tracer: Tracer, name: str, shared: Mapping[str, AttributeValue]) -> None:
        self._tracer, self._name, self._every = tracer, name, dict(shared)
        self._direct = _direct_allowed(tracer, len(self._every) + 2)
        self._processors = getattr(tracer, "span_processor", None)  # the SDK Tracer's
        self._checked: tuple[object, bool] = (None, False)  # the processors last checked
        # Started ahead, a span is live before its publish begins: not where the SDK counts
        # live spans (its own metrics, off unless OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED).
        metrics = getattr(tracer, "_tracer_metrics", None)
        self._may_start_ahead = self._direct and (
            metrics is None or type(metrics).__name__ == "NoOpTracerMetrics"
        )

    def __call__(self, context: Context, event_id: str, attempt: int) -> Span:
        if not self._sdk_processors_only():
            return self._public(context, event_id, attempt)
        return self._written(context, event_id, attempt)

    def ahead(self, context: Context, event_id: str, attempt: int) -> Span | None:
        """The span started now, on the direct path, for a publish that begins later on
        another thread: `begin(span)` then gives it its start time. None where a span must
        start when its publish does: the public path, a processor of the app's own (it sees
        spans start), the SDK's count of live spans."""
        if not self._may_start_ahead or not self._sdk_processors_only():
            return None
        return self._written(context, event_id, attempt)

    def _sdk_processors_only(self) -> bool:
        if not self._direct:
            return False
        # The provider swaps in a new tuple when a processor is added: check it once per tuple.
        current = getattr(self._processors, "_span_processors", None)
        if current is not self._checked[0]:
            self._checked = (current, _sdk_processors(current))
        return self._checked[1]

    def _public(self, context: Context, event_id: str, attempt: int) -> Span:
        attributes = {**self._every, MESSAGE_ID: event_id, ATTEMPT: attempt}
        return self._tracer.start_span(
            self._name, context=context, kind=SpanKind.PRODUCER, attributes=attributes
        )

    def _written(self, context: Context, event_id: str, attempt: int) -> Span:
        span = self._tracer.start_span(self._name, context=context, kind=SpanKind.PRODUCER)
        attributes = getattr(span, "_attributes", None)  # none: sampled out, not recording
        written = getattr(attributes, "_dict", None)
        if isinstance(written, dict):
            written.update(self._every)
            written[MESSAGE_ID] = event_id
            written[ATTEMPT] = attempt
        elif span.is_recording():  # an SDK that keeps them elsewhere: the public way
            span.set_attributes({**self._every, MESSAGE_ID: event_id, ATTEMPT: attempt})
        return span


def span_starter(tracer: Tracer, name: str, shared: Mapping[str, AttributeValue]) -> SpanStarter:
    """A `SpanStarter` for `tracer`."""
    return SpanStarter(tracer, name, shared)


def begin(span: Span) -> None:
    """Start a span started `ahead` once more, now: its start time, as the SDK's `start` set
    it (no processor has seen the span yet: `SpanStarter.ahead`). A span sampled out has no
    time to set."""
    if span.is_recording():
        cast(Any, span)._start_time = time.time_ns()


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
