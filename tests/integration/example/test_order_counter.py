"""The reference receiver on the emulator, fed by the real relay over HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import requests
from google.cloud import firestore

from app.order_counter import OrderCounter, ReceiverConfig
from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.inbox import InboxStatus
from firestore_outbox.consumer.receiver import Received, Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.signing import Signer
from firestore_outbox.testing.emulator import FirestoreEmulator
from tests.support.helpers import make_relay, outbox, run_until

SECRET = "whsec-0123456789abcdef"


@pytest.fixture
def counter(db: firestore.Client) -> Iterator[Receiver]:
    with Receiver(OrderCounter(db, ReceiverConfig(signing_secrets=(SECRET,)))) as receiver:
        yield receiver


def add_orders(db: firestore.Client, settings: Settings, customers: list[str]) -> None:
    for customer in customers:
        with FirestoreUnitOfWork(db, settings) as uow:
            create_new_order(customer, [{"productId": "sku-1", "quantity": 1}], uow)


def counts(db: firestore.Client) -> dict[str, int]:
    return {d.id: d.get("orders") for d in db.collection("order_counts").get()}


def replay(receiver: Receiver, request: Received, **header_changes: str) -> requests.Response:
    headers = {**request.headers, **header_changes}
    return requests.post(receiver.url, data=request.body, headers=headers, timeout=10)


def test_signed_deliveries_are_counted_once_and_replays_absorbed(
    db: firestore.Client, settings: Settings, counter: Receiver
) -> None:
    add_orders(db, settings, ["c-1", "c-2", "c-1", "c-3", "c-1"])
    relay = make_relay(db, settings, counter.url, signing_secrets=(SECRET,))
    summary = relay.run()
    assert (summary["processed"], summary["failed"], summary["retried"]) == (5, 0, 0)
    assert counts(db) == {"c-1": 3, "c-2": 1, "c-3": 1}

    for request in counter.received[:5]:
        response = replay(counter, request)
        assert response.status_code == 200
        assert response.json() == {"status": "duplicate", "eventId": request.event_id}
    assert counts(db) == {"c-1": 3, "c-2": 1, "c-3": 1}  # nothing applied twice
    records = db.collection("inbox").get()
    assert len(records) == 5
    assert {r.get("status") for r in records} == {InboxStatus.SUCCEEDED.value}
    assert {r.get("consumer") for r in records} == {"order-counter"}


def test_an_unsigned_relay_is_refused_as_a_broken_channel_and_no_event_fails(
    db: firestore.Client, settings: Settings, counter: Receiver
) -> None:
    add_orders(db, settings, ["c-1"])
    summary = make_relay(db, settings, counter.url).run()  # no RELAY_SIGNING_SECRET
    # 401 is the channel's fault (a missing or rotated secret), not the event's.
    assert (summary["processed"], summary["failed"]) == (0, 0)
    [event] = outbox(db, settings).values()
    assert (event["status"], event["attempts"]) == ("PENDING", 0)
    assert event["lastError"].startswith("channel: HTTP 401")
    assert "missing webhook-id, webhook-timestamp, webhook-signature" in event["lastError"]
    assert counts(db) == {}


def test_altered_stale_and_wrongly_signed_deliveries_are_refused(
    db: firestore.Client, settings: Settings, counter: Receiver
) -> None:
    add_orders(db, settings, ["c-1"])
    make_relay(db, settings, counter.url, signing_secrets=(SECRET,)).run()
    [original] = counter.received
    attributes = {k[3:]: v for k, v in original.headers.items() if k.startswith("ce-")}
    attributes["datacontenttype"] = original.headers["content-type"]
    stale = Signer([SECRET]).sign(attributes, original.body, timestamp=int(time.time()) - 301)
    wrong = Signer(["whsec-someone-else-000"]).sign(attributes, original.body)
    cases = {
        "altered body": requests.post(
            counter.url,
            data=original.body.replace(b"c-1", b"c-2"),
            headers=original.headers,
            timeout=10,
        ),
        "another event id": replay(counter, original, **{"ce-id": "e-forged"}),
        "stale": replay(counter, original, **stale.headers()),
        "wrong secret": replay(counter, original, **wrong.headers()),
    }
    for case, response in cases.items():
        assert response.status_code == 401, case
        assert response.json()["status"] == "rejected", case
    assert counts(db) == {"c-1": 1}


def test_a_poison_event_is_refused_with_a_4xx_and_fails_at_once(
    db: firestore.Client, settings: Settings, counter: Receiver
) -> None:
    from tests.support.helpers import add_raw_event

    add_raw_event(db, settings, "e-poison", payload={"orderId": "o-1"})  # no customerId
    summary = make_relay(db, settings, counter.url, signing_secrets=(SECRET,)).run()
    assert summary["failed"] == 1
    event = outbox(db, settings)["e-poison"]
    assert event["status"] == "FAILED" and event["lastError"].startswith(
        "rejected after attempt 1: HTTP 422"
    )
    assert counts(db) == {}


def test_a_parked_event_is_answered_422_so_the_relay_stops(
    db: firestore.Client, settings: Settings, counter: Receiver
) -> None:
    add_orders(db, settings, ["c-1"])
    [event_id] = outbox(db, settings)
    consumer = OrderCounter(db, ReceiverConfig(signing_secrets=(SECRET,)))
    relay = make_relay(db, settings, counter.url, signing_secrets=(SECRET,))
    source = relay._source
    consumer.inbox.record(source, event_id).set(
        {"status": "PARKED", "attempts": 5, "lastError": "attempt 5: KeyError: 'x'"}
    )
    summary = relay.run()
    assert summary["failed"] == 1
    assert outbox(db, settings)[event_id]["lastError"].startswith(
        "rejected after attempt 1: HTTP 422"
    )
    assert '"status": "parked"' in outbox(db, settings)[event_id]["lastError"]
    assert counts(db) == {}


def test_other_event_types_and_non_cloudevents(db: firestore.Client, counter: Receiver) -> None:
    body = b'{"x":1}'
    headers = {
        "content-type": "application/json",
        "ce-specversion": "1.0",
        "ce-id": "e-1",
        "ce-source": "/shop",
        "ce-type": "OrderShipped",
    }
    attributes = {k[3:]: v for k, v in headers.items() if k.startswith("ce-")}
    attributes.update(subject="o-1", time="2026-11-21T08:00:00Z")
    attributes["datacontenttype"] = headers["content-type"]
    headers.update({"ce-subject": "o-1", "ce-time": attributes["time"]})
    headers.update(Signer([SECRET]).sign(attributes, body).headers())
    response = requests.post(counter.url, data=body, headers=headers, timeout=10)
    assert (response.status_code, response.json()["status"]) == (200, "ignored")

    del headers["ce-type"]  # a required attribute, and signed
    response = requests.post(counter.url, data=body, headers=headers, timeout=10)
    assert response.status_code == 401
    assert response.json()["error"] == "signature: the signed attribute type is missing"

    attributes.update(type="OrderCreated", time="yesterday")  # signed, but not a CloudEvent
    headers.update({"ce-type": "OrderCreated", "ce-time": "yesterday"})
    headers.update(Signer([SECRET]).sign(attributes, body).headers())
    response = requests.post(counter.url, data=body, headers=headers, timeout=10)
    assert response.status_code == 400
    assert response.json()["error"].startswith("not a CloudEvent")
    assert counts(db) == {}


def test_configuration_requires_a_secret_unless_told_not_to_verify() -> None:
    from app.order_counter import load_receiver_config
    from firestore_outbox.errors import ConfigError

    with pytest.raises(ConfigError, match="RECEIVER_SIGNING_SECRET is not set"):
        load_receiver_config({})
    config = load_receiver_config(
        {
            "RECEIVER_SIGNING_SECRET": f"{SECRET},whsec-previous-0000000",
            "RECEIVER_SIGNATURE_TOLERANCE_SECONDS": "60",
            "RECEIVER_CONSUMER": "billing",
            "INBOX_COLLECTION": "billing_inbox",
            "RECEIVER_COUNTS_COLLECTION": "counts",
        }
    )
    assert config.signing_secrets == (SECRET, "whsec-previous-0000000")
    assert (config.tolerance_seconds, config.consumer) == (60, "billing")
    assert (config.inbox_collection, config.counts_collection) == ("billing_inbox", "counts")
    assert SECRET not in repr(config)
    assert not load_receiver_config({}, verify_signatures=False).verify_signatures
    with pytest.raises(ConfigError, match="INBOX_COLLECTION must not contain"):
        load_receiver_config({"INBOX_COLLECTION": "a/b"}, verify_signatures=False)
    with pytest.raises(ConfigError, match="RECEIVER_SIGNATURE_TOLERANCE_SECONDS"):
        load_receiver_config(
            {"RECEIVER_SIGNATURE_TOLERANCE_SECONDS": "soon"}, verify_signatures=False
        )


def test_firestore_unavailable_at_the_consumer_is_retried_and_applied_once(
    db: firestore.Client, settings: Settings, pausable_emulator: FirestoreEmulator
) -> None:
    from firestore_outbox.firestore.client import get_db_client

    add_orders(db, settings, ["c-1", "c-2"])
    emulator = pausable_emulator  # the consumer's own database
    theirs = get_db_client(Settings(project_id="consumer-db", emulator_host=emulator.host_port))
    theirs.collection("order_counts").document("warm-up").get()  # a running consumer
    config = ReceiverConfig(signing_secrets=(SECRET,), firestore_timeout_seconds=2)
    with Receiver(OrderCounter(theirs, config)) as receiver:
        # Backoff longer than the consumer needs to recover, as in production (10 s).
        relay = make_relay(
            db,
            settings,
            receiver.url,
            signing_secrets=(SECRET,),
            max_attempts=10,
            backoff_base_seconds=1.0,
            backoff_max_seconds=2.0,
        )
        emulator.pause()
        try:
            first = relay.run()
        finally:
            emulator.resume()
        # Each delivery timed out at the relay while the consumer waited on Firestore.
        assert (first["retried"], first["processed"]) == (2, 0), first
        run_until(
            relay, lambda: {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
        )
        assert counts(theirs) == {"c-1": 1, "c-2": 1}
