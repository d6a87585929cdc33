"""One reading of a request, then verification of that reading: the mode is decided once,
ambiguity is refused, and structured events are read from the bytes that were signed."""

from __future__ import annotations

import json

import pytest

from firestore_outbox.consumer.events import (
    MalformedDelivery,
    parse_request,
    verify_event,
    verify_request,
)
from firestore_outbox.signing import InvalidSignature, Signer
from tests.unit.test_signing import ATTRIBUTES, BODY, NOW, SECRET, headers


def structured(attributes: dict[str, str] = ATTRIBUTES, data: bytes = BODY) -> bytes:
    """A structured event as the Function Compute publisher writes it: data last."""
    signature = Signer([SECRET]).sign(attributes, data, timestamp=NOW)
    head = json.dumps({**attributes, **signature.attributes()}, separators=(",", ":"))[:-1]
    return head.encode() + b',"data":' + data + b"}"


def test_a_structured_event_verifies_and_yields_exactly_the_signed_data() -> None:
    event = verify_event(structured(), [SECRET], now=NOW)
    assert (event.mode, event.attributes, event.data) == ("structured", ATTRIBUTES, BODY)
    over_http = {"Content-Type": "application/cloudevents+json; charset=utf-8"}
    assert verify_request(over_http, structured(), [SECRET], now=NOW).data == BODY


def test_ce_headers_with_a_structured_content_type_are_refused_before_any_check() -> None:
    mixed = {"ce-id": "forged", "Content-Type": "application/cloudevents+json"}
    with pytest.raises(MalformedDelivery, match="ambiguous"):
        parse_request(mixed, structured())
    with pytest.raises(MalformedDelivery, match="as attributes"):
        webhook = {k: v for k, v in headers().items() if k.startswith("webhook-")}
        parse_request({**webhook, "Content-Type": "application/cloudevents+json"}, structured())


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"Content-Type": "application/json"}, "no ce- headers"),
        ({"Content-Type": "application/cloudevents-batch+json"}, "unsupported"),
        ({**headers(), "ce-datacontenttype": "text/plain"}, "not allowed in binary"),
        ({**headers(), "Content-Type": "application/json, text/plain"}, "several Content-Type"),
        ({**headers(), "ce-subject": "caf\u00e9"}, "not percent-encoded ASCII"),
        ({**headers(), "ce-subject": "%ff"}, "not percent-encoded UTF-8"),
    ],
    ids=["no-mode", "batch", "ce-datacontenttype", "two-types", "raw-latin1", "bad-utf8"],
)
def test_ambiguous_or_unreadable_requests_are_refused(given: dict[str, str], message: str) -> None:
    with pytest.raises(MalformedDelivery, match=message):
        parse_request(given, BODY)
    assert issubclass(MalformedDelivery, InvalidSignature)  # consumers refusing those refuse these


def test_header_values_are_percent_decoded_before_the_digest() -> None:
    attributes = {**ATTRIBUTES, "subject": 'commande n°7 "été" 100%'}
    signature = Signer([SECRET]).sign(attributes, BODY, timestamp=NOW)
    wire = {
        **headers(),
        **signature.headers(),
        "ce-subject": "commande%20n%C2%B07%20%22%C3%A9t%C3%A9%22%20100%25",
    }
    assert (
        verify_request(wire, BODY, [SECRET], now=NOW).attributes["subject"]
        == (attributes["subject"])
    )


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (structured().replace(b'"id":"e-1"', b'"id":"e-1","id":"e-2"'), "repeated"),
        (structured()[:-1] + b',"extra":1}', "last member"),
        (b'{"id":"e-1"}', "with data"),
        (b"[1,2]", "with data"),
        (b"not json", "not a structured CloudEvent"),
        (structured()[:-1] + b',"data_base64":"AA=="}', "last member"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (structured().replace(b'"webhookid":"', b'"webhookid":"\\ud800'), "lone surrogate"),
        (structured().replace(b'"webhookid":"', b'"webhookid":"\xed\xa0\x80'), "lone surrogate"),
    ],
    ids=[
        "repeated-member",
        "data-not-last",
        "no-data",
        "not-object",
        "not-json",
        "base64",
        "deep",
        "surrogate-escape",
        "surrogate-bytes",
    ],
)
def test_malformed_structured_events_are_refused(event: bytes, message: str) -> None:
    with pytest.raises(MalformedDelivery, match=message):
        verify_event(event, [SECRET], now=NOW)


def test_structured_attributes_are_covered_too() -> None:
    swapped = structured().replace(b'"type":"OrderCreated"', b'"type":"OrderShipped"')
    with pytest.raises(InvalidSignature, match="do not match its webhook-id"):
        verify_event(swapped, [SECRET], now=NOW)
    altered = structured().replace(b'"c-1"', b'"c-2"')
    with pytest.raises(InvalidSignature, match="no signature matches"):
        verify_event(altered, [SECRET], now=NOW)


@pytest.mark.parametrize(
    "data", [b"[" * 100_000 + b"]" * 100_000, b'{"note": "\\udfff"}'], ids=["deep", "surrogate"]
)
def test_signed_data_that_python_cannot_carry_is_malformed_not_a_crash(data: bytes) -> None:
    signature = Signer([SECRET]).sign(ATTRIBUTES, data, timestamp=NOW)
    event = verify_request({**headers(), **signature.headers()}, data, [SECRET], now=NOW)
    with pytest.raises(MalformedDelivery, match="not JSON"):
        event.json_data()
