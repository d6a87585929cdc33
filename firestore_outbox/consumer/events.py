"""Read a CloudEvent exactly once, then verify what was read. Standard library only.

A verifier and a parser that each decide for themselves how to read a request disagree
sooner or later: the CloudEvents SDK takes binary mode from any `ce-` header, while a verifier
may take structured mode from the content type, and then a signature checked over one reading
vouches for another. Here the mode is decided once (`parse_request`), anything ambiguous is
refused, and the consumer acts on the `ReceivedEvent` that was verified, never on a second
parse of the request.

- Binary mode (the HTTP publisher): attributes from the `ce-` headers, percent-decoded as the
  CloudEvents HTTP binding says; `datacontenttype` from `Content-Type`; data = the body;
  signature from the `webhook-*` headers.
- Kafka (the Kafka publisher): the CloudEvents Kafka binding's binary mode, attributes from
  the `ce_` headers (UTF-8, not percent-encoded), `datacontenttype` from `content-type`, data
  = the message's value; signature from the `webhook-*` headers, as over HTTP.
- Structured mode (the Function Compute publisher, or `application/cloudevents+json` over
  HTTP): one JSON document; attributes are its members, data the exact bytes of its `data`
  member, which must come last; signature from its `webhook*` attributes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from firestore_outbox import json_input
from firestore_outbox.observability.trace_context import trace_fields
from firestore_outbox.signing import (
    DEFAULT_TOLERANCE_SECONDS,
    ID_ATTRIBUTE,
    ID_HEADER,
    SIGNATURE_ATTRIBUTE,
    SIGNATURE_HEADER,
    TIMESTAMP_ATTRIBUTE,
    TIMESTAMP_HEADER,
    InvalidSignature,
    check_digest,
    verify,
)

STRUCTURED_JSON = "application/cloudevents+json"
_DATA_MEMBER = b',"data":'
_SIGNATURE_NAMES = (ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER)
_SIGNATURE_ATTRIBUTES = (ID_ATTRIBUTE, TIMESTAMP_ATTRIBUTE, SIGNATURE_ATTRIBUTE)


class MalformedDelivery(InvalidSignature):
    """A request that cannot be read as one CloudEvent without ambiguity (a 400, not a 401).
    A subclass of `InvalidSignature`, so a consumer that refuses those refuses these too."""


@dataclass(frozen=True)
class ReceivedEvent:
    """One CloudEvent as read: decoded string attributes and the data bytes as received."""

    mode: str  # "binary" or "structured"
    attributes: dict[str, str]
    data: bytes
    signature: tuple[str | None, str | None, str | None]  # id, timestamp, signatures
    # The W3C trace context it carried (unsigned, untrusted: only to continue a trace), from
    # the `traceparent`/`tracestate` headers in binary mode, the attributes in structured mode.
    trace: dict[str, str] = field(default_factory=dict)

    def json_data(self) -> Any:
        """The data parsed as JSON (what the signature covered, parsed once)."""
        try:
            return json_input.loads(self.data)
        except ValueError:
            raise MalformedDelivery("the data is not JSON") from None


def parse_request(headers: Mapping[str, str], body: bytes) -> ReceivedEvent:
    """Decide the mode once and read the event; `MalformedDelivery` if anything is ambiguous."""
    lowered = {name.lower(): value for name, value in headers.items()}
    content_type = lowered.get("content-type", "").strip()
    media = content_type.partition(";")[0].strip().lower()
    ce = {name[3:]: value for name, value in lowered.items() if name.startswith("ce-")}
    if "," in content_type:
        raise MalformedDelivery("several Content-Type values")
    if media.startswith("application/cloudevents"):
        if ce:
            raise MalformedDelivery("ce- headers with a structured content type are ambiguous")
        if media != STRUCTURED_JSON:
            raise MalformedDelivery(f"unsupported structured format {media}")
        if any(name in lowered for name in _SIGNATURE_NAMES):
            raise MalformedDelivery("a structured event carries its signature as attributes")
        return parse_event(body)
    if not ce:
        raise MalformedDelivery("not a CloudEvent: no ce- headers, no structured content type")
    if "datacontenttype" in ce or "data" in ce:
        raise MalformedDelivery("ce-datacontenttype and ce-data are not allowed in binary mode")
    attributes = {name: _decode(name, value) for name, value in ce.items()}
    if content_type:
        attributes["datacontenttype"] = content_type
    signature = tuple(lowered.get(name) for name in _SIGNATURE_NAMES)
    signed = (signature[0], signature[1], signature[2])
    return ReceivedEvent("binary", attributes, body, signed, trace_fields(lowered))


def parse_event(event: bytes) -> ReceivedEvent:
    """Read a structured-mode event (as the Function Compute publisher sends it)."""
    try:
        envelope = json_input.loads(event, object_pairs_hook=_unique_members)
        start = event.index(_DATA_MEMBER) + len(_DATA_MEMBER)
    except ValueError as exc:
        raise MalformedDelivery(f"not a structured CloudEvent with data: {exc}") from None
    if not isinstance(envelope, dict) or "data" not in envelope:
        raise MalformedDelivery("not a structured CloudEvent with data")
    tail = event[start:].rstrip()
    data = tail[:-1]
    try:
        same = tail.endswith(b"}") and json_input.loads(data) == envelope["data"]
    except ValueError:
        same = False
    if not same:
        raise MalformedDelivery("data must be the event's last member")
    extras = [name for name, value in envelope.items() if name != "data"]
    if "data_base64" in extras:
        raise MalformedDelivery("data_base64 is not supported")
    attributes = {name: envelope[name] for name in extras if isinstance(envelope[name], str)}
    signature = tuple(attributes.pop(name, None) for name in _SIGNATURE_ATTRIBUTES)
    signed = (signature[0], signature[1], signature[2])
    return ReceivedEvent("structured", attributes, data, signed, trace_fields(attributes))


def parse_kafka_message(headers: Iterable[tuple[str, bytes | None]], value: bytes) -> ReceivedEvent:
    """Read a Kafka message as the Kafka publisher sends it (`confluent_kafka.Message.headers()`
    and `.value()`); `MalformedDelivery` for a repeated, undecodable or missing header."""
    lowered: dict[str, str] = {}
    for name, raw in headers:
        name = name.lower()
        if name in lowered:
            raise MalformedDelivery(f"the header {name} is repeated")
        try:
            lowered[name] = (raw or b"").decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedDelivery(f"the header {name} is not UTF-8") from None
    attributes = {name[3:]: v for name, v in lowered.items() if name.startswith("ce_")}
    if not attributes:
        raise MalformedDelivery("not a CloudEvent: no ce_ headers")
    if "datacontenttype" in attributes or "data" in attributes:
        raise MalformedDelivery("ce_datacontenttype and ce_data are not allowed in binary mode")
    if "content-type" in lowered:
        attributes["datacontenttype"] = lowered["content-type"]
    signature = tuple(lowered.get(name) for name in _SIGNATURE_NAMES)
    signed = (signature[0], signature[1], signature[2])
    return ReceivedEvent("binary", attributes, value, signed, trace_fields(attributes))


def verify_kafka_message(
    headers: Iterable[tuple[str, bytes | None]],
    value: bytes,
    secrets: Iterable[str],
    *,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> ReceivedEvent:
    """Read a Kafka message (`parse_kafka_message`) and verify its signature as for HTTP."""
    return _verified(parse_kafka_message(headers, value), secrets, tolerance, now)


def verify_request(
    headers: Mapping[str, str],
    body: bytes,
    secrets: Iterable[str],
    *,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> ReceivedEvent:
    """Read an HTTP delivery (either mode) and verify it; return the verified event."""
    return _verified(parse_request(headers, body), secrets, tolerance, now)


def verify_event(
    event: bytes,
    secrets: Iterable[str],
    *,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> ReceivedEvent:
    """Read and verify a structured-mode event, as a Function Compute event function gets it."""
    return _verified(parse_event(event), secrets, tolerance, now)


def _verified(
    event: ReceivedEvent, secrets: Iterable[str], tolerance: float, now: float | None
) -> ReceivedEvent:
    webhook_id, timestamp, signature = event.signature
    verify(webhook_id, timestamp, signature, event.data, secrets, tolerance=tolerance, now=now)
    check_digest(str(webhook_id), event.attributes)
    return event


def _decode(name: str, value: str) -> str:
    # The binding percent-encodes anything outside printable ASCII; a raw byte is ambiguous.
    if not value.isascii():
        raise MalformedDelivery(f"ce-{name} is not percent-encoded ASCII")
    try:
        return unquote(value, errors="strict")
    except UnicodeDecodeError:
        raise MalformedDelivery(f"ce-{name} is not percent-encoded UTF-8") from None


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise ValueError("a member is repeated")
    return dict(pairs)
