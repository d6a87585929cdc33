"""One trace from `create_new_order` through the relay's publish to the receiver's processing,
on the emulator with the real relay and the reference receiver over HTTP."""

from __future__ import annotations

import io
import itertools
import json
import time
from collections.abc import Iterator

import pytest
from google.cloud import firestore
from opentelemetry import trace
from opentelemetry.trace import SpanKind, StatusCode

from app.api import make_orders_app
from app.order_counter import OrderCounter, ReceiverConfig
from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_orders, add_raw_event, make_relay, outbox
from tests.support.otel import finished_spans, span_exporter

SECRET = "whsec-0123456789abcdef"


def ids(traceparent: str) -> tuple[int, int]:
    """(trace id, parent span id) of a W3C traceparent."""
    _, trace_id, span_id, _ = traceparent.split("-")
    return int(trace_id, 16), int(span_id, 16)


@pytest.fixture(autouse=True)
def spans() -> Iterator[None]:
    span_exporter().clear()
    yield
    span_exporter().clear()


def test_one_trace_from_create_new_order_to_the_receivers_processing(
    db: firestore.Client, settings: Settings
) -> None:
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("checkout") as root, FirestoreUnitOfWork(db, settings) as uow:
        create_new_order("c-1", [{"productId": "sku-1", "quantity": 1}], uow)
    trace_id = root.get_span_context().trace_id
    [stored] = outbox(db, settings).values()
    assert ids(stored["traceparent"]) == (trace_id, root.get_span_context().span_id)

    counter = OrderCounter(db, ReceiverConfig(signing_secrets=(SECRET,)))
    with Receiver(counter) as receiver:
        relay = make_relay(db, settings, receiver.url, signing_secrets=(SECRET,))
        assert relay.run()["processed"] == 1
        [request] = receiver.received
    assert db.collection("order_counts").document("c-1").get().get("orders") == 1

    spans = {span.name: span for span in finished_spans()}
    host = receiver.url.split("/")[2]
    send, process = spans[f"send {host}"], spans["process"]
    assert {span.context.trace_id for span in (send, process)} == {trace_id}
    assert send.kind is SpanKind.PRODUCER and process.kind is SpanKind.CONSUMER
    assert send.parent is not None and send.parent.span_id == root.get_span_context().span_id
    assert process.parent is not None and process.parent.span_id == send.context.span_id
    # The delivery carried the publish span's context as the W3C header (binary mode).
    assert ids(request.headers["traceparent"]) == (trace_id, send.context.span_id)
    assert dict(send.attributes or {}) == {
        "messaging.system": "http",
        "messaging.destination.name": host,
        "messaging.operation.name": "send",
        "messaging.operation.type": "send",
        "messaging.message.id": stored["eventId"],
        "firestore_outbox.attempt": 1,
    }  # delivered: no outcome attribute, no error status
    assert send.status.status_code is StatusCode.UNSET
    assert dict(process.attributes or {}) == {
        "messaging.operation.name": "process",
        "messaging.operation.type": "process",
        "messaging.consumer.group.name": "order-counter",
        "messaging.message.id": stored["eventId"],
        "http.response.status_code": 200,
    }


def test_a_failed_attempt_is_an_error_span_and_each_attempt_its_own_span(
    db: firestore.Client, settings: Settings
) -> None:
    with FirestoreUnitOfWork(db, settings) as uow:  # outside any span: a trace of its own
        create_new_order("c-2", [{"productId": "sku-1", "quantity": 1}], uow)
    [stored] = outbox(db, settings).values()
    assert "traceparent" not in stored

    with Receiver(lambda _: ReceiverAnswer(503)) as receiver:
        make_relay(db, settings, receiver.url).run()
        requests = receiver.received
    sends = [span for span in finished_spans() if span.name.startswith("send ")]
    assert len(sends) == len(requests) >= 1
    assert [span.attributes["firestore_outbox.attempt"] for span in sends] == list(  # type: ignore[index]
        range(1, len(sends) + 1)
    )
    for span in sends:
        assert span.parent is None  # no creation context: the publish starts the trace
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == "HTTP 503"  # type: ignore[index]
        assert span.attributes["firestore_outbox.outcome"] == "retry"  # type: ignore[index]
    carried = {ids(r.headers["traceparent"])[1] for r in requests}
    assert carried == {span.context.span_id for span in sends}


def test_a_publish_span_starts_when_its_publish_begins_not_when_its_batch_is_handed_out(
    db: firestore.Client, settings: Settings
) -> None:
    """One publishing thread, three events handed out together: each span starts when its
    own publish begins (after the one before it ended) and covers its request's arrival."""
    add_orders(db, settings, 3)
    arrived: list[int] = []

    def slowly(_: Received) -> ReceiverAnswer:
        arrived.append(time.time_ns())
        time.sleep(0.1)
        return ReceiverAnswer()

    with Receiver(slowly) as receiver:
        summary = make_relay(db, settings, receiver.url, concurrency=1).run()
    assert summary["processed"] == 3
    sends = sorted(
        (span for span in finished_spans() if span.name.startswith("send ")),
        key=lambda span: span.start_time or 0,
    )
    assert len(sends) == 3
    for before, after in itertools.pairwise(sends):
        assert (after.start_time or 0) >= (before.end_time or 0)
    for span, moment in zip(sends, sorted(arrived), strict=True):
        assert (span.start_time or 0) <= moment <= (span.end_time or 0)


def test_an_attempt_handed_back_unsent_leaves_no_span(
    db: firestore.Client, settings: Settings
) -> None:
    """A 401 breaks the channel after three sends: the events handed out with them go back
    unsent and no span says they were sent."""
    add_orders(db, settings, 6)

    def refuse(received: Received) -> ReceiverAnswer:
        if not receiver.received[:-1]:  # the first: slow, so that all six are handed out
            time.sleep(0.3)  # within the 0.5 s the attempt has
        return ReceiverAnswer(401)

    with Receiver(refuse) as receiver:
        summary = make_relay(db, settings, receiver.url, concurrency=1).run()
        sent = len(receiver.received)
    assert (summary["stoppedBy"], sent) == ("channel", 3)
    assert summary["leased"] > sent  # handed out, then back
    sends = [span for span in finished_spans() if span.name.startswith("send ")]
    assert len(sends) == sent


def test_a_malformed_stored_traceparent_is_dropped_and_the_event_delivered(
    db: firestore.Client, settings: Settings, unique: str
) -> None:
    add_raw_event(db, settings, unique, traceparent="00-not-a-trace\r\nX-Evil: 1", tracestate=7)
    with Receiver() as receiver:
        assert make_relay(db, settings, receiver.url).run()["processed"] == 1
        [request] = receiver.received
    [send] = [span for span in finished_spans() if span.name.startswith("send ")]
    assert send.parent is None
    assert "x-evil" not in request.headers
    assert ids(request.headers["traceparent"])[0] == send.context.trace_id


def test_the_order_api_starts_the_trace_the_event_carries(
    db: firestore.Client, settings: Settings
) -> None:
    caller = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    body = json.dumps({"customerId": "c-9", "items": [{"productId": "p", "quantity": 1}]})
    environ: dict[str, object] = {
        "REQUEST_METHOD": "POST",
        "PATH_INFO": "/orders",
        "CONTENT_TYPE": "application/json",
        "CONTENT_LENGTH": str(len(body)),
        "HTTP_TRACEPARENT": caller,
        "wsgi.input": io.BytesIO(body.encode()),
    }
    statuses: list[str] = []
    make_orders_app(db, settings)(environ, lambda status, headers: statuses.append(status))
    assert statuses[0].startswith("201")

    [server] = [span for span in finished_spans() if span.name == "POST /orders"]
    assert server.kind is SpanKind.SERVER
    assert server.context.trace_id == ids(caller)[0]
    assert server.parent is not None and server.parent.span_id == ids(caller)[1]
    assert dict(server.attributes or {})["http.response.status_code"] == 201
    [stored] = outbox(db, settings).values()
    assert ids(stored["traceparent"]) == (server.context.trace_id, server.context.span_id)
