"""Pins the SDK internals `firestore_outbox.observability.telemetry_sdk` writes a publish span's
attributes through: the
spans it starts directly are the spans the public `start_span` makes, and whatever could make
them differ (a sampler reading attributes, attribute limits) takes the public path."""

from __future__ import annotations

from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import (
    SpanLimits,
    SpanProcessor,
    SynchronousMultiSpanProcessor,
    TracerProvider,
)
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import (
    ALWAYS_OFF,
    DEFAULT_ON,
    AlwaysRecordSampler,
    Decision,
    ParentBasedTraceIdRatio,
    Sampler,
    SamplingResult,
)
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    TraceFlags,
    set_span_in_context,
)

from firestore_outbox.observability import telemetry_sdk
from firestore_outbox.observability.telemetry_sdk import span_starter

SHARED = {"messaging.system": "http", "messaging.destination.name": "h:1"}
PARENT = SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, True, TraceFlags(1))


def _provider(**options: Any) -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(**options)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def _exported(provider: TracerProvider, exporter: InMemorySpanExporter) -> dict[str, Any]:
    start = span_starter(provider.get_tracer("t"), "send h:1", SHARED)
    start(set_span_in_context(NonRecordingSpan(PARENT), Context()), "event-1", 3).end()
    (span,) = exporter.get_finished_spans()
    return {
        "name": span.name,
        "kind": span.kind,
        "parent": span.parent,
        "attributes": dict(span.attributes or {}),
    }


def test_the_sdk_default_takes_the_direct_path_and_makes_the_public_path_s_span(
    monkeypatch: Any,
) -> None:
    provider, exporter = _provider()
    assert telemetry_sdk._direct_allowed(provider.get_tracer("t"), 4)
    direct = _exported(provider, exporter)
    monkeypatch.setattr(telemetry_sdk, "_direct_allowed", lambda tracer, n: False)
    provider, exporter = _provider()
    public = _exported(provider, exporter)
    assert direct == public
    assert direct["kind"] is SpanKind.PRODUCER
    assert direct["attributes"] == {
        **SHARED,
        "messaging.message.id": "event-1",
        "firestore_outbox.attempt": 3,
    }


def test_the_sdk_s_own_samplers_are_attribute_blind_but_always_record_is_not() -> None:
    for sampler in (DEFAULT_ON, ALWAYS_OFF, ParentBasedTraceIdRatio(0.5)):
        assert telemetry_sdk._blind(sampler), sampler
    assert not telemetry_sdk._blind(AlwaysRecordSampler(ALWAYS_OFF))


class _Reading(Sampler):
    """A sampler that decides on the attributes: it must be given them at the start."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        attributes: Any = args[4] if len(args) > 4 else kwargs.get("attributes")
        self.seen.append(dict(attributes or {}))
        return SamplingResult(Decision.RECORD_AND_SAMPLE, attributes)

    def get_description(self) -> str:
        return "reading"


def test_a_custom_sampler_is_given_the_attributes_at_the_start() -> None:
    sampler = _Reading()
    provider, exporter = _provider(sampler=sampler)
    assert _exported(provider, exporter)["attributes"]["messaging.message.id"] == "event-1"
    assert sampler.seen == [
        {**SHARED, "messaging.message.id": "event-1", "firestore_outbox.attempt": 3}
    ]


def test_attribute_limits_are_applied_as_the_sdk_applies_them() -> None:
    provider, exporter = _provider(span_limits=SpanLimits(max_span_attribute_length=4))
    assert _exported(provider, exporter)["attributes"]["messaging.message.id"] == "even"
    provider, exporter = _provider(span_limits=SpanLimits(max_span_attributes=2))
    assert len(_exported(provider, exporter)["attributes"]) == 2


def test_a_sampled_out_span_is_started_without_attributes_and_not_exported() -> None:
    provider, exporter = _provider(sampler=ALWAYS_OFF)
    start = span_starter(provider.get_tracer("t"), "send", SHARED)
    span = start(Context(), "event-1", 1)
    span.end()
    assert not span.is_recording()
    assert exporter.get_finished_spans() == ()


def test_a_processor_of_the_app_s_own_sees_the_attributes_when_the_span_starts() -> None:
    seen: list[dict[str, Any]] = []

    class _OnStart(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            seen.append(dict(span.attributes or {}))

    provider, exporter = _provider()
    start = span_starter(provider.get_tracer("t"), "send h:1", SHARED)
    start(Context(), "event-1", 1).end()  # SDK processors only: the direct path
    provider.add_span_processor(_OnStart())  # added after the starter was built
    start(Context(), "event-2", 2).end()
    assert seen == [{**SHARED, "messaging.message.id": "event-2", "firestore_outbox.attempt": 2}]
    ids = [(s.attributes or {})["messaging.message.id"] for s in exporter.get_finished_spans()]
    assert ids == ["event-1", "event-2"]


def test_with_the_sdk_s_own_processors_the_span_starts_without_attributes_to_clean() -> None:
    """The direct path is taken, not only allowed: the span is started with no attributes for
    the SDK to clean and is given them written."""
    provider, exporter = _provider()
    tracer = provider.get_tracer("t")
    given: list[object] = []
    start_span = tracer.start_span

    def spying(*args: Any, **kwargs: Any) -> Any:
        given.append(kwargs.get("attributes"))
        return start_span(*args, **kwargs)

    tracer.start_span = spying  # type: ignore[method-assign]
    span_starter(tracer, "send h:1", SHARED)(Context(), "event-1", 1).end()
    assert given == [None]
    (span,) = exporter.get_finished_spans()
    assert dict(span.attributes or {})["messaging.message.id"] == "event-1"


def test_an_app_s_processor_inside_one_of_the_sdk_s_multi_processors_takes_the_public_path() -> (
    None
):
    seen: list[dict[str, Any]] = []

    class _OnStart(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            seen.append(dict(span.attributes or {}))

    provider, _ = _provider()
    inner = SynchronousMultiSpanProcessor()
    inner.add_span_processor(_OnStart())
    provider.add_span_processor(inner)
    span_starter(provider.get_tracer("t"), "send h:1", SHARED)(Context(), "event-1", 1).end()
    assert seen == [{**SHARED, "messaging.message.id": "event-1", "firestore_outbox.attempt": 1}]
