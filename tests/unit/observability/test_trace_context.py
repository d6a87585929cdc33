"""Trace context on deliveries: which publishers carry it where, what is dropped, and that it
changes nothing that is signed."""

from __future__ import annotations

import json
import subprocess
import sys

from firestore_outbox.consumer.events import (
    parse_event,
    parse_request,
    verify_event,
    verify_request,
)
from firestore_outbox.observability.trace_context import trace_fields
from firestore_outbox.publishers.base import Delivery, cloudevent_attributes, cloudevent_headers
from firestore_outbox.publishers.fc.shared import structured_cloudevent
from firestore_outbox.signing import Signer

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
SECRET = "whsec-0123456789abcdef"


def delivery(**trace: str) -> Delivery:
    return Delivery(
        "e-1", "OrderCreated", "//src", "order-1", "2026-01-01T00:00:00Z", b"{}", 1, **trace
    )  # type: ignore[arg-type]


def test_binary_mode_carries_the_w3c_headers_and_structured_mode_the_attributes() -> None:
    traced = delivery(traceparent=PARENT, tracestate="vendor=1")
    headers = cloudevent_headers(traced)
    assert (headers["traceparent"], headers["tracestate"]) == (PARENT, "vendor=1")
    assert not any(name.startswith("ce-trace") for name in headers)
    assert parse_request(headers, b"{}").trace == {"traceparent": PARENT, "tracestate": "vendor=1"}

    envelope = structured_cloudevent(traced)
    assert json.loads(envelope)["traceparent"] == PARENT
    assert parse_event(envelope).trace == {"traceparent": PARENT, "tracestate": "vendor=1"}


def test_an_untraced_delivery_carries_no_trace_fields() -> None:
    plain = delivery()
    assert "traceparent" not in cloudevent_headers(plain)
    assert "traceparent" not in cloudevent_attributes(plain)
    assert parse_request(cloudevent_headers(plain), b"{}").trace == {}


def test_the_trace_context_is_outside_the_signature_so_each_attempt_verifies() -> None:
    signer = Signer([SECRET])
    for traced in (delivery(), delivery(traceparent=PARENT)):
        signature = signer.sign(cloudevent_attributes(traced), traced.body)
        assert (
            signature.headers()["webhook-id"]
            == (signer.sign(cloudevent_attributes(delivery()), b"{}").headers()["webhook-id"])
        )
        headers = {**cloudevent_headers(traced), **signature.headers()}
        assert verify_request(headers, traced.body, [SECRET]).attributes["id"] == "e-1"
        assert verify_event(structured_cloudevent(traced, signature), [SECRET]).data == b"{}"


def test_anything_but_a_valid_traceparent_is_dropped() -> None:
    for bad in ("", "01-" + PARENT[3:], PARENT.upper(), PARENT + "-extra", PARENT + "\n", 7):
        assert trace_fields({"traceparent": bad, "tracestate": "a=b"}) == {}
    assert trace_fields({"traceparent": PARENT, "tracestate": "x" * 513}) == {"traceparent": PARENT}


def test_without_an_sdk_nothing_is_stored_and_spans_cost_nothing() -> None:
    code = (
        "from opentelemetry import trace; from firestore_outbox.observability import tracing; "
        "t = trace.get_tracer('x'); "
        "s = t.start_as_current_span('outer'); s.__enter__(); "
        "print(tracing.creation_context()); "
        "c = tracing.publish_span('http', 'h', 'e', {'traceparent': "
        f"'{PARENT}'" + "}, 1); span, carried = c.__enter__(); "
        "print(carried, span.is_recording())"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    # The API alone: no span records, and the stored creation context passes on unchanged.
    first, second = result.stdout.splitlines()
    assert first == "{}"
    assert second == f"{{'traceparent': '{PARENT}'}} False"


def test_an_all_zero_stored_trace_id_is_no_parent() -> None:
    zero = "00-" + "0" * 32 + "-b7ad6b7169203331-01"
    code = (
        "from firestore_outbox.observability import tracing; "
        f"c = tracing.publish_span('http', 'h', 'e', {{'traceparent': '{zero}'}}, 1); "
        "span, carried = c.__enter__(); print(carried)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "{}"  # API only: no span of its own, nothing to carry


def test_the_relay_writes_the_fields_the_w3c_propagator_writes_for_each_span_context() -> None:
    from opentelemetry.trace import (
        INVALID_SPAN_CONTEXT,
        NonRecordingSpan,
        SpanContext,
        TraceFlags,
        TraceState,
        set_span_in_context,
    )
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    from firestore_outbox.observability.span_context import carried_fields as _carried

    ids = (0x0AF7651916CD43DD8448EB211C80319C, 0x00AD6B7169203331)
    contexts = [
        SpanContext(*ids, False, TraceFlags(0x01)),  # the shared empty state
        SpanContext(*ids, False, TraceFlags(0x03), TraceState()),  # an empty state of its own
        SpanContext(*ids, True, TraceFlags(0x00), TraceState([("v", "1"), ("w", "xy")])),
        SpanContext(1, 1, False, TraceFlags(0x01)),  # ids written with their leading zeros
        INVALID_SPAN_CONTEXT,
    ]
    propagator = TraceContextTextMapPropagator()
    for context in contexts:
        expected: dict[str, str] = {}
        propagator.inject(expected, set_span_in_context(NonRecordingSpan(context)))
        assert _carried(context) == expected, context
    assert _carried(contexts[2])["tracestate"] == "v=1,w=xy"
    assert _carried(contexts[3])["traceparent"] == f"00-{1:032x}-{1:016x}-01"
