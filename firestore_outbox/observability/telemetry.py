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

import argparse
import threading
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

from opentelemetry import metrics, trace

from firestore_outbox.errors import ConfigError
from firestore_outbox.observability.otlp_settings import otlp_signals

# Bounded: a function's flush must leave the invocation time to return.
FLUSH_TIMEOUT_MILLIS = 5000

_lock = threading.Lock()
_flushers: list[object] = []  # the SDK providers installed here (force_flush each)


def configure_telemetry(environ: Mapping[str, str], *, metrics_port: int | None = None) -> bool:
    """Install the OTLP/HTTP exporters as configured (see the module docstring), and with
    `metrics_port` a Prometheus endpoint (`/metrics` on 127.0.0.1 and that port); True when
    this process exports (`environ`: the configuration's snapshot, `Configuration.environ`).
    `ConfigError` when the needed extra is not installed."""
    if (environ.get("OTEL_SDK_DISABLED") or "").strip().lower() == "true":
        return False
    signals = otlp_signals(environ)
    traces, otlp_metrics = "TRACES" in signals, "METRICS" in signals
    if not (traces or otlp_metrics or metrics_port is not None):
        return False
    with _lock:
        if _flushers:
            return True
        sdk = _sdk()
        resource = _resource(sdk)
        if traces and isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            tracer_provider = sdk.TracerProvider(resource=resource)
            tracer_provider.add_span_processor(sdk.BatchSpanProcessor(sdk.OTLPSpanExporter()))
            trace.set_tracer_provider(tracer_provider)
            _flushers.append(tracer_provider)
        readers: list[Any] = []
        if otlp_metrics:
            readers.append(sdk.PeriodicExportingMetricReader(sdk.OTLPMetricExporter()))
        if metrics_port is not None:
            readers.append(_prometheus(metrics_port))
        if readers and _is_default(metrics.get_meter_provider()):
            meter_provider = sdk.MeterProvider(resource=resource, metric_readers=readers)
            metrics.set_meter_provider(meter_provider)
            _flushers.append(meter_provider)
        return bool(_flushers)


def _sdk() -> Any:
    """The SDK's classes, from the `otel` extra, imported only when telemetry is wanted."""
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
            "telemetry is configured (an OTLP endpoint or --metrics-port) but the "
            "OpenTelemetry SDK is not installed: pip install 'firestore-outbox[otel]'"
        ) from None
    return SimpleNamespace(
        OTLPMetricExporter=OTLPMetricExporter,
        OTLPSpanExporter=OTLPSpanExporter,
        MeterProvider=MeterProvider,
        PeriodicExportingMetricReader=PeriodicExportingMetricReader,
        Resource=Resource,
        TracerProvider=TracerProvider,
        BatchSpanProcessor=BatchSpanProcessor,
    )


def _resource(sdk: Any) -> Any:
    # Our default name only where OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name none
    # (attributes given to `create` would override theirs).
    detected = sdk.Resource.create()
    if str(detected.attributes.get("service.name", "")).startswith("unknown_service"):
        detected = detected.merge(sdk.Resource({"service.name": "firestore-outbox"}))
    return detected


def _prometheus(port: int) -> Any:
    """A metric reader serving Prometheus' text format on 127.0.0.1:`port` (a scraper on
    another host needs a proxy or a port forward: nothing is exposed beyond this machine)."""
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import start_http_server
    except ImportError:
        raise ConfigError(
            "--metrics-port needs the Prometheus exporter: "
            "pip install 'firestore-outbox[prometheus]'"
        ) from None
    try:
        start_http_server(port, addr="127.0.0.1")
    except OSError as exc:
        raise ConfigError(f"--metrics-port {port}: cannot listen: {exc.strerror or exc}") from None
    try:  # one library: no otel_scope_* labels on every series
        return PrometheusMetricReader(scope_info_enabled=False)
    except TypeError:  # the exporter before 0.64b0 has no such setting: its series carry them
        return PrometheusMetricReader()


def flush(timeout_millis: int = FLUSH_TIMEOUT_MILLIS) -> None:
    """Export what the providers installed here hold, within `timeout_millis` each."""
    for provider in list(_flushers):
        provider.force_flush(timeout_millis)  # type: ignore[attr-defined]


def _is_default(provider: object) -> bool:
    # The API's placeholder until a provider is set (a private class: compare by name).
    return type(provider).__name__ in ("_ProxyMeterProvider", "NoOpMeterProvider")


def add_metrics_port(parser: Any) -> None:
    """The `--metrics-port` option of the long-running commands."""
    parser.add_argument(
        "--metrics-port",
        type=_port,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics on http://127.0.0.1:PORT/metrics (needs the "
        "prometheus extra; default: off)",
    )


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise argparse.ArgumentTypeError(f"must be a port number 1-65535, got {text!r}")
    return int(text)
