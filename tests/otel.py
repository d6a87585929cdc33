"""The OpenTelemetry SDK with in-memory exporters, installed once per test process (the
global providers can be set only once); each test clears what earlier tests recorded."""

from __future__ import annotations

import functools

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@functools.cache
def span_exporter() -> InMemorySpanExporter:
    """The process's in-memory span exporter, the SDK installed on first use."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


def finished_spans() -> list[ReadableSpan]:
    return list(span_exporter().get_finished_spans())
