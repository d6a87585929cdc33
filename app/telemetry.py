"""Export the relay's traces and metrics over OTLP/HTTP, configured by OpenTelemetry's standard
`OTEL_*` variables, and flush them before a Function Compute invocation returns.

Nothing happens unless an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT`, or the
per-signal `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `..._METRICS_ENDPOINT`) and
`OTEL_SDK_DISABLED` is not `true`; then the SDK and exporter of the `otel` extra are installed
once per process as the global providers. The exporters read the rest themselves from the
process environment, as every OpenTelemetry SDK does: `OTEL_EXPORTER_OTLP_HEADERS` (an SLS
project and AccessKey, an ARMS token), `..._TIMEOUT`, `..._COMPRESSION`, `OTEL_SERVICE_NAME`,
`OTEL_RESOURCE_ATTRIBUTES`, `OTEL_METRIC_EXPORT_INTERVAL`. An application that installed its
own providers keeps them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping

from opentelemetry import metrics, trace

from app.errors import ConfigError
from app.logs import OTLP_ENDPOINTS

# Bounded: a function's flush must leave the invocation time to return.
FLUSH_TIMEOUT_MILLIS = 5000

_lock = threading.Lock()
_flushers: list[object] = []  # the SDK providers installed here (force_flush each)


def _wanted(environ: Mapping[str, str], signal: str) -> bool:
    if environ.get(f"OTEL_{signal}_EXPORTER", "otlp").strip().lower() == "none":
        return False
    endpoints = (OTLP_ENDPOINTS[0], f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT")
    return any((environ.get(name) or "").strip() for name in endpoints)


def configure_telemetry(environ: Mapping[str, str] | None = None) -> bool:
    """Install the OTLP/HTTP exporters as configured (see the module docstring); True when
    this process exports. `ConfigError` when an endpoint is set but the `otel` extra is not
    installed."""
    environ = os.environ if environ is None else environ
    if (environ.get("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return False
    traces = _wanted(environ, "TRACES")
    metrics_wanted = _wanted(environ, "METRICS")
    if not (traces or metrics_wanted):
        return False
    with _lock:
        if _flushers:
            return True
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            raise ConfigError(
                "an OTLP endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT) but the OpenTelemetry "
                "SDK is not installed: pip install 'firestore-outbox[otel]'"
            ) from None
        # Our default name only where OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name none
        # (attributes given here would override theirs).
        detected = Resource.create()
        if str(detected.attributes.get("service.name", "")).startswith("unknown_service"):
            detected = detected.merge(Resource({"service.name": "firestore-outbox"}))
        resource = detected
        if traces and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            tracer_provider = TracerProvider(resource=resource)
            tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            trace.set_tracer_provider(tracer_provider)
            _flushers.append(tracer_provider)
        if metrics_wanted and _is_default(metrics.get_meter_provider()):
            reader = PeriodicExportingMetricReader(OTLPMetricExporter())
            meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
            metrics.set_meter_provider(meter_provider)
            _flushers.append(meter_provider)
        return bool(_flushers)


def flush(timeout_millis: int = FLUSH_TIMEOUT_MILLIS) -> None:
    """Export what the providers installed here hold, within `timeout_millis` each."""
    for provider in list(_flushers):
        provider.force_flush(timeout_millis)  # type: ignore[attr-defined]


def _is_default(provider: object) -> bool:
    # The API's placeholder until a provider is set (a private class: compare by name).
    return type(provider).__name__ in ("_ProxyMeterProvider", "NoOpMeterProvider")
