"""`EventBridgePublisher` against a local `PutEvents` endpoint (tests/support/eventbridge_server.py)
that checks each request's signature with its own implementation."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.events import verify_event
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.eventbridge.publisher import (
    EventBridgePublisher,
    EventBridgeTarget,
)
from firestore_outbox.publishers.eventbridge.settings import EventBridgeSettings
from firestore_outbox.publishers.settings import AccessKeySettings
from firestore_outbox.relay import Relay
from firestore_outbox.signing import Signer
from tests.support.eventbridge_server import KEY_ID, SECRET, TOKEN, EventBridgeServer
from tests.support.helpers import FAST, add_orders, outbox, publish_together, run_until


def delivery(n: int, body: bytes | None = None) -> Delivery:
    data = body if body is not None else json.dumps({"orderId": f"o-{n}"}).encode()
    return Delivery(f"e-{n}", "OrderCreated", "/shop", f"o-{n}", "2026-11-22T08:00:00Z", data, 1)


@pytest.fixture
def server() -> Iterator[EventBridgeServer]:
    server = EventBridgeServer().start()
    yield server
    server.stop()


def publisher(
    server: EventBridgeServer, signer: Signer | None = None, **changes: str
) -> EventBridgePublisher:
    target = EventBridgeTarget(
        endpoint=server.endpoint,
        bus="orders-bus",
        access_key_id=KEY_ID,
        access_key_secret=SECRET,
        security_token=TOKEN,
    )
    return EventBridgePublisher(
        dataclasses.replace(target, **changes),
        connect_timeout=1.0,
        read_timeout=2.0,
        signer=signer,
        linger=1.0,
    )


def test_events_go_as_cloudevents_in_signed_batches_of_at_most_16(
    server: EventBridgeServer,
) -> None:
    results = publish_together(publisher(server).publish, [delivery(n) for n in range(20)])

    assert {r.outcome for r in results.values()} == {Outcome.DELIVERED}
    assert sorted(len(batch) for batch in server.batches) == [4, 16]
    event = next(e for e in server.events if e["id"] == "e-3")
    assert event == {
        "specversion": "1.0",
        "id": "e-3",
        "type": "OrderCreated",
        "source": "/shop",
        "subject": "o-3",
        "time": "2026-11-22T08:00:00Z",
        "datacontenttype": "application/json",
        "aliyuneventbusname": "orders-bus",
        "data": {"orderId": "o-3"},
    }


def test_a_batch_never_exceeds_256_kib(server: EventBridgeServer) -> None:
    body = json.dumps({"blob": "x" * 100_000}).encode()  # three of these pass 256 KiB
    results = publish_together(publisher(server).publish, [delivery(n, body) for n in range(5)])

    assert {r.outcome for r in results.values()} == {Outcome.DELIVERED}
    assert max(len(batch) for batch in server.batches) == 2


def test_an_event_over_256_kib_is_rejected_unsent(server: EventBridgeServer) -> None:
    body = json.dumps({"blob": "x" * 300_000}).encode()
    result = publisher(server).publish(delivery(1, body))
    assert result.outcome is Outcome.REJECTED
    assert server.batches == []


def test_failed_entries_retry_alone(server: EventBridgeServer) -> None:
    server.entry_errors = {"e-1": "InternalError", "e-6": "InvalidArgument"}
    p = publisher(server)

    results = publish_together(p.publish, [delivery(n) for n in range(8)])

    assert results["e-1"].outcome is Outcome.RETRY
    assert "InternalError" in (results["e-1"].error or "")
    assert results["e-6"].outcome is Outcome.REJECTED
    delivered = {i for i, r in results.items() if r.outcome is Outcome.DELIVERED}
    assert delivered == {f"e-{n}" for n in range(8)} - {"e-1", "e-6"}
    server.entry_errors = {}
    assert p.publish(delivery(1)).outcome is Outcome.DELIVERED
    assert server.batches[-1] == ["e-1"]
    assert sorted(e["id"] for e in server.events) == sorted([*delivered, "e-1"])


@pytest.mark.parametrize(
    ("status", "code", "outcome"),
    [
        (404, "EventBusNotExist", Outcome.CHANNEL),
        (403, "AccessDenied", Outcome.CHANNEL),
        (400, "InvalidArgument", Outcome.REJECTED),
        (500, "InternalError", Outcome.RETRY),
        (429, "Throttling", Outcome.RETRY),
    ],
)
def test_a_refused_request_is_classified_by_its_code_and_status(
    server: EventBridgeServer, status: int, code: str, outcome: Outcome
) -> None:
    server.request_error = (status, code)
    results = publish_together(publisher(server).publish, [delivery(1), delivery(2)])
    assert {r.outcome for r in results.values()} == {outcome}
    error = results["e-2"].error or ""
    assert code in error and SECRET not in error


def test_a_wrong_secret_is_a_broken_channel(server: EventBridgeServer) -> None:
    result = publisher(server, access_key_secret="wrong-secret").publish(delivery(1))
    assert result.outcome is Outcome.CHANNEL
    assert server.events == []


def test_signed_events_verify_as_structured_cloudevents(server: EventBridgeServer) -> None:
    secret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    assert publisher(server, Signer([secret])).publish(delivery(2)).outcome is Outcome.DELIVERED
    [event] = server.events
    data = json.dumps(event.pop("data")).encode()
    event.pop("aliyuneventbusname")
    verify_event(json.dumps(event)[:-1].encode() + b',"data":' + data + b"}", [secret])


@pytest.mark.emulator
def test_the_relay_delivers_through_eventbridge(
    db: firestore.Client, settings: Settings, server: EventBridgeServer
) -> None:
    event_ids = add_orders(db, settings, 5)
    server.entry_errors = {event_ids[0]: "InternalError"}
    key = AccessKeySettings(access_key_id=KEY_ID, access_key_secret=SECRET, security_token=TOKEN)
    eventbridge = EventBridgeSettings(endpoint=server.endpoint, bus="orders-bus", access_key=key)
    relay = Relay(db, settings, dataclasses.replace(FAST, publisher=eventbridge))

    assert relay.run()["processed"] == 4
    server.entry_errors = {}
    run_until(relay, lambda: all(e["status"] == "PROCESSED" for e in outbox(db, settings).values()))
    assert sorted(e["id"] for e in server.events) == event_ids
    assert server.batches[-1] == [event_ids[0]]
