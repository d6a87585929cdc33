"""The OpenTelemetry SDK with in-memory exporters and reader, installed once per test process (the
global providers can be set only once); each test clears what earlier tests recorded."""

from __future__ import annotations

import functools
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
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


@functools.cache
def metric_reader() -> InMemoryMetricReader:
    """The process's in-memory metric reader, the SDK's meter provider installed on first use."""
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    return reader


def metric_points(name: str) -> dict[frozenset[tuple[str, Any]], Any]:
    """The points of metric `name` (cumulative), by their attributes: a sum's or gauge's
    value, a histogram's count."""
    points: dict[frozenset[tuple[str, Any]], Any] = {}
    data = metric_reader().get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != name:
                    continue
                for point in metric.data.data_points:
                    key = frozenset((point.attributes or {}).items())
                    points[key] = getattr(point, "value", getattr(point, "count", None))
    return points
