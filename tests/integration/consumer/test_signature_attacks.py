"""Attacks on the reference receiver with one captured genuine delivery (issue 12, item 4).

The attacker sees one signed delivery on the wire and replays it, edited, within the
signature's tolerance. Every forgery must be refused and apply nothing. The attacks copy
whatever signature material the relay sent, so they hold for any wire version.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import requests
from google.cloud import firestore

from app.order_counter import OrderCounter, ReceiverConfig
from firestore_outbox.consumer.receiver import Received, Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_raw_event, make_relay

SECRET = "whsec-0123456789abcdef"


@pytest.fixture
def counter(db: firestore.Client) -> Iterator[Receiver]:
    with Receiver(OrderCounter(db, ReceiverConfig(signing_secrets=(SECRET,)))) as receiver:
        yield receiver


def counts(db: firestore.Client) -> dict[str, int]:
    return {d.id: d.get("orders") for d in db.collection("order_counts").get()}


def capture(
    db: firestore.Client, settings: Settings, counter: Receiver, event_type: str
) -> Received:
    """One genuine signed delivery of an event of `event_type` for customer c-1."""
    add_raw_event(db, settings, "e-captured", eventType=event_type, payload={"customerId": "c-1"})
    summary = make_relay(db, settings, counter.url, signing_secrets=(SECRET,)).run()
    assert summary["processed"] == 1, summary
    [request] = counter.received
    return request


def post(receiver: Receiver, headers: dict[str, str], body: bytes) -> requests.Response:
    return requests.post(receiver.url, data=body, headers=headers, timeout=10)


def test_a_structured_body_with_binary_headers_cannot_forge_events(
    db: firestore.Client, settings: Settings, counter: Receiver
) -> None:
    genuine = capture(db, settings, counter, "OrderCreated")
    assert counts(db) == {"c-1": 1}
    ce = {k: v for k, v in genuine.headers.items() if k.startswith("ce-")}
    # Every signature the relay sent, moved to where a structured-mode verifier reads it
    # (CloudEvents attribute names: lower case, no dashes).
    signatures = {
        name.replace("-", ""): value
        for name, value in genuine.headers.items()
        if not name.startswith("ce-")
        and name not in {"content-type", "content-length", "host", "user-agent"}
    }
    for n in range(3):
        envelope = {
            "specversion": "1.0",
            "id": ce["ce-id"],
            "source": ce["ce-source"],
            "type": ce["ce-type"],
            "subject": ce["ce-subject"],
            "time": ce["ce-time"],
            "datacontenttype": "application/json",
            **signatures,
            "customerId": "victim",  # what a binary-mode parser takes for the data
        }
        head = json.dumps(envelope, separators=(",", ":"))[:-1].encode()
        body = head + b',"data":' + genuine.body + b"}"
        headers = {
            **ce,
            "ce-id": f"forged-{n}",
            "content-type": "application/cloudevents+json",
        }
        response = post(counter, headers, body)
        assert response.status_code in (400, 401), response.text
    assert counts(db) == {"c-1": 1}


def test_a_captured_order_shipped_replayed_as_order_created_is_refused(
    db: firestore.Client, settings: Settings, counter: Receiver
) -> None:
    genuine = capture(db, settings, counter, "OrderShipped")
    assert counts(db) == {}  # ignored: not an OrderCreated
    response = post(counter, {**genuine.headers, "ce-type": "OrderCreated"}, genuine.body)
    assert response.status_code == 401, response.text
    assert counts(db) == {}


@pytest.mark.parametrize(
    "change",
    [
        {"ce-subject": "order-other"},
        {"ce-time": "2020-01-01T00:00:00Z"},
        {"ce-specversion": "0.3"},
        {"content-type": "text/plain"},
    ],
    ids=["subject", "time", "specversion", "content-type"],
)
def test_every_attribute_a_consumer_acts_on_is_signed(
    db: firestore.Client, settings: Settings, counter: Receiver, change: dict[str, str]
) -> None:
    genuine = capture(db, settings, counter, "OrderCreated")
    response = post(counter, {**genuine.headers, **change}, genuine.body)
    assert response.status_code == 401, response.text
    assert counts(db) == {"c-1": 1}


def structured_from(genuine: Received, webhook_id: bytes) -> bytes:
    """The captured delivery as one structured-mode document whose `webhookid` is replaced."""
    attributes = {k[3:]: v for k, v in genuine.headers.items() if k.startswith("ce-")}
    head = json.dumps(attributes, separators=(",", ":"))[:-1].encode()
    return head + b',"webhookid":"' + webhook_id + b'","data":' + genuine.body + b"}"


@pytest.mark.parametrize(
    ("edit", "status"),
    [
        ({"webhook-timestamp": "9" * 400}, 401),
        ({"webhook-timestamp": "9" * 5000}, 401),
        ("deeply nested", 400),
        ("lone surrogate", 400),
    ],
    ids=["timestamp-400-digits", "timestamp-5000-digits", "deep-structured", "surrogate-id"],
)
def test_input_python_cannot_carry_is_answered_and_applies_nothing(
    db: firestore.Client,
    settings: Settings,
    counter: Receiver,
    edit: dict[str, str] | str,
    status: int,
) -> None:
    # Each of these once escaped verification as an exception: the receiver dropped the
    # connection with no answer.
    genuine = capture(db, settings, counter, "OrderCreated")
    structured = {"content-type": "application/cloudevents+json"}
    if isinstance(edit, dict):
        response = post(counter, {**genuine.headers, **edit}, genuine.body)
    elif edit == "deeply nested":
        response = post(counter, structured, b"[" * 100_000 + b"]" * 100_000)
    else:
        response = post(counter, structured, structured_from(genuine, b"\\ud800"))
    assert response.status_code == status, response.text
    assert response.json()["status"] == "rejected"
    assert counts(db) == {"c-1": 1}
