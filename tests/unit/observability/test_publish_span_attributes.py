"""The relay's PRODUCER span is started through the SDK's public `start_span(attributes=...)`:
a sampler and a processor of the app's own see every attribute when the span starts, and the
SDK's attribute limits apply."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import DEFAULT_ON, Sampler, SamplingResult
from opentelemetry.trace import SpanKind

from firestore_outbox.observability.publish_spans import PublishSpans

NO_CONTEXT = {"traceparent": None, "tracestate": None}
EXPECTED = {
    "messaging.system": "http",
    "messaging.destination.name": "h:1",
    "messaging.operation.name": "send",
    "messaging.operation.type": "send",
    "messaging.message.id": "event-1",
    "firestore_outbox.attempt": 3,
}


class _Reading(Sampler):
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        attributes = kwargs.get("attributes", args[4] if len(args) > 4 else None)
        self.seen.append(dict(attributes or {}))
        return DEFAULT_ON.should_sample(*args, **kwargs)

    def get_description(self) -> str:
        return "reading"


class _OnStart(SpanProcessor):
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.seen.append(dict(span.attributes or {}))


def _one_span(monkeypatch: pytest.MonkeyPatch, provider: TracerProvider) -> dict[str, Any]:
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    with PublishSpans("http", "h:1").span("event-1", NO_CONTEXT, 3):
        pass
    (span,) = exporter.get_finished_spans()
    assert span.kind is SpanKind.PRODUCER
    assert span.name == "send h:1"
    return dict(span.attributes or {})


def test_the_app_s_sampler_and_processor_see_every_attribute_at_the_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sampler, processor = _Reading(), _OnStart()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(processor)
    assert _one_span(monkeypatch, provider) == EXPECTED
    assert sampler.seen == [EXPECTED]
    assert processor.seen == [EXPECTED]


def test_the_sdk_s_attribute_limits_apply(monkeypatch: pytest.MonkeyPatch) -> None:
    limited = TracerProvider(span_limits=SpanLimits(max_span_attribute_length=4))
    assert _one_span(monkeypatch, limited)["messaging.message.id"] == "even"
