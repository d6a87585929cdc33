"""A real relay handler invocation exports the backlog gauges over OTLP/HTTP: read when the
metrics are collected (the flush before the handler returns), so they show the outbox as the
run left it. A local receiver decodes the protobuf with `opentelemetry-proto`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from bench.latency_proxy import DelayProxy
from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.deadline import UNANSWERED
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.observability.metrics import BacklogGauges
from firestore_outbox.ops.status import backlog_reader
from tests.integration.observability.test_otlp_export import invoke
from tests.support.helpers import add_raw_event, relay_environment, utcnow


def gauge_points(body: bytes, name: str) -> list[Any]:
    """The data points of gauge `name` in one OTLP metrics export."""
    exported = ExportMetricsServiceRequest.FromString(body)
    return [
        point
        for resource_metrics in exported.resource_metrics
        for scope in resource_metrics.scope_metrics
        for metric in scope.metrics
        if metric.name == name
        for point in metric.gauge.data_points
    ]


def test_a_handler_invocation_exports_the_backlog_as_the_run_left_it(
    db: firestore.Client, settings: Settings, unique: str, tmp_path: Path
) -> None:
    add_raw_event(db, settings, f"{unique}-ok")
    add_raw_event(db, settings, f"{unique}-refused")
    later = utcnow().replace(microsecond=0)
    add_raw_event(db, settings, f"{unique}-later", nextAttemptAt=later.replace(year=later.year + 1))

    def respond(request: Received) -> ReceiverAnswer:
        return ReceiverAnswer(422 if request.headers.get("ce-id", "").endswith("-refused") else 200)

    with Receiver(respond) as downstream, Receiver() as collector:
        env = {
            **relay_environment(settings, downstream.url),
            "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url.removesuffix("/events"),
            "OTEL_METRIC_EXPORT_INTERVAL": "600000",  # only the handler's flush exports
        }
        result = invoke(env, tmp_path)
        assert result.returncode == 0, result.stderr
        summary = json.loads(result.stdout)
        exports = [r.body for r in collector.received if r.path == "/v1/metrics"]

    assert (summary["processed"], summary["failed"]) == (1, 1)
    [body] = exports
    backlog = {
        next(a.value.string_value for a in point.attributes if a.key == "status"): point.as_int
        for point in gauge_points(body, "outbox.backlog")
    }
    assert backlog == {"PENDING": 1, "PROCESSING": 0, "PROCESSED": 1, "FAILED": 1}
    [age] = gauge_points(body, "outbox.oldest_due.age")
    assert age.as_double == 0.0  # what is left is due next year: nothing waits


def test_a_reading_slower_than_the_firestore_deadline_is_a_gap_not_a_wait(
    db: firestore.Client, settings: Settings, unique: str
) -> None:
    add_raw_event(db, settings, unique)
    host, _, port = str(settings.emulator_host).rpartition(":")
    # 0.3 s each way: the reading's six queries need well over two seconds through it.
    with DelayProxy(host, int(port), 0.3) as proxy:
        slow = get_db_client(
            Settings(project_id=settings.project_id, emulator_host=proxy.host_port)
        )
        read = backlog_reader(
            slow, settings.outbox_collection, partitions=16, lock_timeout_seconds=60, timeout=1.0
        )
        with pytest.raises(Exception) as raised:
            read()
        gap = BacklogGauges(read, max_age=0).reading()
        slow.close()
    assert isinstance(raised.value, (TimeoutError, *UNANSWERED))
    assert gap is None  # the gauges report nothing for this collection, not a zero
