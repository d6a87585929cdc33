"""The inbox's decorators continue the trace a delivery carried, as a CONSUMER span: with the
SDK's in-memory span exporter, on the emulator."""

from __future__ import annotations

from typing import Any

from cloudevents.core.v1.event import CloudEvent
from google.cloud import firestore
from opentelemetry.trace import SpanKind

from firestore_outbox.consumer.inbox import Inbox, Verdict
from tests.support.otel import finished_spans, span_exporter

SOURCE = "//firestore.googleapis.com/projects/p/databases/(default)/documents/outbox"
TRACE_ID, SENDER = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"


def test_both_decorators_process_in_a_consumer_span_child_of_the_carried_context(
    db: firestore.Client,
) -> None:
    span_exporter().clear()
    inbox = Inbox(db, "mailer")
    carried = {"traceparent": f"00-{TRACE_ID}-{SENDER}-01", "tracestate": "sls=1"}

    @inbox.idempotent
    def notify(event: Any) -> str:
        return "mailed"

    @inbox.idempotent_in_transaction
    def record(event: Any, transaction: firestore.Transaction) -> str:
        return "recorded"

    mapping = {"id": "e-1", "source": SOURCE, **carried}
    cloudevent = CloudEvent({"id": "e-2", "source": SOURCE, "type": "OrderCreated", **carried})
    assert notify(mapping).verdict is Verdict.APPLIED
    assert record(cloudevent).verdict is Verdict.APPLIED

    spans = [span for span in finished_spans() if span.name == "process"]
    assert [dict(span.attributes or {})["messaging.message.id"] for span in spans] == [
        "e-1",
        "e-2",
    ]
    for span in spans:
        assert span.kind is SpanKind.CONSUMER
        assert f"{span.context.trace_id:032x}" == TRACE_ID  # the producer's trace goes on
        assert span.parent is not None and f"{span.parent.span_id:016x}" == SENDER
        assert span.context.trace_state.to_header() == "sls=1"
        assert dict(span.attributes or {})["messaging.consumer.group.name"] == "mailer"
