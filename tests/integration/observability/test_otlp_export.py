"""A real relay handler invocation, in a process of its own configured by the standard OTEL_*
variables, exports its spans and metrics over OTLP/HTTP to a local receiver that decodes the
protobuf with `opentelemetry-proto`; and it does so before the handler returns."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from google.cloud import firestore
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_raw_event, relay_environment

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT = f"00-{TRACE_ID}-b7ad6b7169203331-01"

# After the handler returns, os._exit skips the SDK's exit hooks: only what the handler
# flushed itself can have reached the collector.
INVOKE = """
import json, os, types
from function_compute.relay_handler import handler
context = types.SimpleNamespace(request_id="req-otlp", function=types.SimpleNamespace(timeout=60))
print(json.dumps(handler(b"", context)), flush=True)
os._exit(0)
"""


def invoke(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    root = Path(__file__).resolve().parents[3]
    return subprocess.run(
        [sys.executable, "-c", INVOKE],
        env={**env, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_handler_invocation_exports_its_spans_and_metrics_before_it_returns(
    db: firestore.Client, settings: Settings, unique: str, tmp_path: Path
) -> None:
    add_raw_event(db, settings, unique, traceparent=PARENT, tracestate="sls=1")
    with Receiver() as downstream, Receiver() as collector:
        env = {
            **relay_environment(settings, downstream.url),
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url.removesuffix("/events"),
            "OTEL_EXPORTER_OTLP_HEADERS": "x-sls-otel-project=shop,x-sls-otel-instance-id=relay",
            "OTEL_SERVICE_NAME": "outbox-relay",
            "OTEL_METRIC_EXPORT_INTERVAL": "600000",  # never on its own within this test
        }
        result = invoke(env, tmp_path)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["processed"] == 1
        requests = {request.path: request for request in collector.received}
        [delivery] = downstream.received

    traces = requests["/v1/traces"]
    assert traces.headers["content-type"] == "application/x-protobuf"
    assert traces.headers["x-sls-otel-project"] == "shop"
    exported = ExportTraceServiceRequest.FromString(traces.body)
    [resource_spans] = exported.resource_spans
    resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert resource["service.name"] == "outbox-relay"
    [span] = [s for scope in resource_spans.scope_spans for s in scope.spans]
    assert span.name == f"send {downstream.url.split('/')[2]}"
    assert span.kind == Span.SPAN_KIND_PRODUCER
    assert span.trace_id.hex() == TRACE_ID  # the stored creation context is the parent
    assert span.parent_span_id.hex() == "b7ad6b7169203331"
    attributes = {a.key: a.value for a in span.attributes}
    assert attributes["messaging.message.id"].string_value == unique
    assert delivery.headers["traceparent"] == f"00-{TRACE_ID}-{span.span_id.hex()}-01"
    assert delivery.headers["tracestate"] == "sls=1"

    metrics = ExportMetricsServiceRequest.FromString(requests["/v1/metrics"].body)
    names = {
        metric.name
        for resource_metrics in metrics.resource_metrics
        for scope in resource_metrics.scope_metrics
        for metric in scope.metrics
    }
    assert {"outbox.deliveries", "outbox.events.processed", "outbox.delivery.lag"} <= names


def test_an_unreachable_collector_costs_the_telemetry_not_the_delivery(
    db: firestore.Client, settings: Settings, unique: str, tmp_path: Path
) -> None:
    add_raw_event(db, settings, unique, traceparent=PARENT)
    with Receiver() as downstream:
        env = {
            **relay_environment(settings, downstream.url),
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",  # nothing listens there
            "OTEL_EXPORTER_OTLP_TIMEOUT": "1",
        }
        result = invoke(env, tmp_path)
        [delivery] = downstream.received
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["processed"] == 1
    assert delivery.headers["traceparent"].startswith(f"00-{TRACE_ID}-")
