"""Ids, types and subjects that HTTP cannot carry as they are (non-Latin-1, control
characters, spaces, quotes, `%`) travel percent-encoded as the CloudEvents HTTP binding says,
and the `cloudevents` SDK's parser gives a consumer the original values back."""

from __future__ import annotations

from urllib.parse import unquote

from cloudevents.core.bindings.http import HTTPMessage, from_http_event
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.base import Delivery, Outcome, header_value
from firestore_outbox.publishers.http.publisher import HttpPublisher
from tests.support.helpers import add_raw_event, make_relay, outbox

EVENT_ID = 'évt-€ "1"%\t2'
EVENT_TYPE = "Commande📦 créée"
SUBJECT = "client\nü 😀\x01"


def parsed(receiver: Receiver, index: int = 0) -> tuple[str, str, str, str]:
    request = receiver.received[index]
    event = from_http_event(HTTPMessage(request.headers, request.body))
    return (
        event.get_id(),
        event.get_type(),
        str(event.get_subject()),
        unquote(request.headers["idempotency-key"]),
    )


def test_the_binding_example_is_encoded_as_the_spec_writes_it() -> None:
    assert header_value("Euro € 😀") == "Euro%20%E2%82%AC%20%F0%9F%98%80"
    assert header_value('a "b" 100%') == "a%20%22b%22%20100%25"
    assert header_value("OrderCreated") == "OrderCreated"  # the usual ids are untouched


def test_any_id_type_and_subject_travel_and_come_back_as_they_were(receiver: Receiver) -> None:
    delivery = Delivery(EVENT_ID, EVENT_TYPE, "/shop", SUBJECT, "2026-11-21T08:00:00Z", b"{}", 1)
    http = HttpPublisher(receiver.url, connect_timeout=1, read_timeout=2)
    assert http.publish(delivery).outcome is Outcome.DELIVERED
    assert parsed(receiver) == (EVENT_ID, EVENT_TYPE, SUBJECT, EVENT_ID)


def test_the_relay_delivers_an_event_whose_ids_http_cannot_carry_as_they_are(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_raw_event(db, settings, EVENT_ID, eventType=EVENT_TYPE, aggregateId=SUBJECT)
    summary = make_relay(db, settings, receiver.url).run()
    assert (summary["processed"], summary["failed"]) == (1, 0)
    assert outbox(db, settings)[EVENT_ID]["status"] == "PROCESSED"
    assert parsed(receiver) == (EVENT_ID, EVENT_TYPE, SUBJECT, EVENT_ID)
