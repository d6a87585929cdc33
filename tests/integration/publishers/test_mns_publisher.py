"""`MnsPublisher` against a local MNS endpoint (tests/support/mns_server.py) that checks every
request's signature with the MNS SDK's own code."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.events import verify_event
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.mns.publisher import MnsPublisher, MnsTarget
from firestore_outbox.publishers.mns.settings import MnsSettings
from firestore_outbox.publishers.settings import AccessKeySettings
from firestore_outbox.relay import Relay
from firestore_outbox.signing import Signer
from tests.support.helpers import FAST, add_orders, outbox, publish_together, run_until
from tests.support.mns_server import KEY_ID, SECRET, TOKEN, MnsServer


def delivery(n: int, body: bytes | None = None) -> Delivery:
    data = body if body is not None else json.dumps({"orderId": f"o-{n}"}).encode()
    return Delivery(f"e-{n}", "OrderCreated", "/shop", f"o-{n}", "2026-11-22T08:00:00Z", data, 1)


@pytest.fixture
def server() -> Iterator[MnsServer]:
    server = MnsServer().start()
    yield server
    server.stop()


def publisher(server: MnsServer, queue: str | None = "orders", **changes: object) -> MnsPublisher:
    target = MnsTarget(
        endpoint=server.endpoint,
        queue=queue,
        topic=None if queue else "order-events",
        access_key_id=KEY_ID,
        access_key_secret=SECRET,
        security_token=TOKEN,
    )
    options: dict[str, object] = {"connect_timeout": 1.0, "read_timeout": 2.0, "linger": 1.0}
    target = dataclasses.replace(target, **{k: v for k, v in changes.items() if k != "signer"})
    return MnsPublisher(target, signer=changes.get("signer"), **options)  # type: ignore[arg-type]


def test_a_queue_gets_signed_batches_of_at_most_16_with_id_and_type_attributes(
    server: MnsServer,
) -> None:
    results = publish_together(publisher(server).publish, [delivery(n) for n in range(20)])

    assert {r.outcome for r in results.values()} == {Outcome.DELIVERED}
    assert sorted(len(batch) for batch in server.batches) == [4, 16]
    assert sorted(s.event_id for s in server.stored) == sorted(results)
    stored = next(s for s in server.stored if s.event_id == "e-3")
    assert stored.destination == "/queues/orders"
    assert json.loads(server.payload(stored)) == {"orderId": "o-3"}
    assert stored.properties == {
        "ce_specversion": "1.0",
        "ce_id": "e-3",
        "ce_type": "OrderCreated",
        "ce_source": "/shop",
        "ce_subject": "o-3",
        "ce_time": "2026-11-22T08:00:00Z",
        "ce_datacontenttype": "application/json",
    }


def test_a_partly_failed_batch_retries_only_the_failed_entries(server: MnsServer) -> None:
    server.entry_errors = {"e-2": "InternalError", "e-5": "InvalidArgument"}
    p = publisher(server)

    results = publish_together(p.publish, [delivery(n) for n in range(8)])

    assert results["e-2"].outcome is Outcome.RETRY
    assert results["e-2"].error is not None and "InternalError" in results["e-2"].error
    assert results["e-5"].outcome is Outcome.REJECTED
    delivered = {i for i, r in results.items() if r.outcome is Outcome.DELIVERED}
    assert delivered == {f"e-{n}" for n in range(8)} - {"e-2", "e-5"}
    assert {s.event_id for s in server.stored} == delivered

    server.entry_errors = {}
    assert p.publish(delivery(2)).outcome is Outcome.DELIVERED
    assert server.batches[-1] == ["e-2"]
    assert sorted(s.event_id for s in server.stored) == sorted([*delivered, "e-2"])


@pytest.mark.parametrize(
    ("status", "code", "outcome"),
    [
        (404, "QueueNotExist", Outcome.CHANNEL),
        (403, "AccessDenied", Outcome.CHANNEL),
        (400, "InvalidArgument", Outcome.REJECTED),
        (503, "ServiceUnavailable", Outcome.RETRY),
        (500, "InternalError", Outcome.RETRY),
        (429, "SomethingNew", Outcome.RETRY),
        (409, "SomethingNew", Outcome.REJECTED),
    ],
)
def test_a_refused_request_is_classified_by_its_error_code_and_status(
    server: MnsServer, status: int, code: str, outcome: Outcome
) -> None:
    server.request_error = (status, code)
    results = publish_together(publisher(server).publish, [delivery(1), delivery(2)])

    assert {r.outcome for r in results.values()} == {outcome}
    error = results["e-1"].error or ""
    assert error.startswith(f"HTTP {status}") and code in error
    assert SECRET not in error  # the server echoed the key: masked


def test_a_wrong_secret_is_a_broken_channel(server: MnsServer) -> None:
    result = publisher(server, access_key_secret="not-the-secret").publish(delivery(1))
    assert result.outcome is Outcome.CHANNEL
    assert "SignatureDoesNotMatch" in (result.error or "")
    assert server.stored == []


def test_an_unreachable_endpoint_is_a_broken_channel(server: MnsServer) -> None:
    result = publisher(server, endpoint="http://127.0.0.1:9").publish(delivery(1))
    assert result.outcome is Outcome.CHANNEL


def test_a_message_over_64_kib_is_rejected_unsent(server: MnsServer) -> None:
    big = json.dumps({"blob": "x" * 50_000}).encode()  # 66.7 KiB once base64-encoded
    result = publisher(server).publish(delivery(1, big))
    assert result.outcome is Outcome.REJECTED
    assert "MessageTooLarge" in (result.error or "")
    assert server.requests == []


def test_a_topic_gets_publish_message_with_the_json_as_it_is(server: MnsServer) -> None:
    result = publisher(server, queue=None).publish(delivery(7))

    assert result.outcome is Outcome.DELIVERED
    [stored] = server.stored
    assert stored.destination == "/topics/order-events"
    assert json.loads(stored.body) == {"orderId": "o-7"}
    assert stored.properties["ce_id"] == "e-7"
    assert stored.properties["ce_type"] == "OrderCreated"


def test_a_topic_error_is_classified_by_its_code(server: MnsServer) -> None:
    server.request_error = (404, "TopicNotExist")
    assert publisher(server, queue=None).publish(delivery(1)).outcome is Outcome.CHANNEL


def test_signed_messages_verify_as_cloudevents(server: MnsServer) -> None:
    secret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    p = publisher(server, queue=None, signer=Signer([secret]))
    assert p.publish(delivery(4)).outcome is Outcome.DELIVERED
    [stored] = server.stored
    # The consumer rebuilds the structured CloudEvent from the properties and the body.
    event = {k.removeprefix("ce_"): v for k, v in stored.properties.items()}
    document = json.dumps(event)[:-1].encode() + b',"data":' + server.payload(stored) + b"}"
    verify_event(document, [secret])


@pytest.mark.emulator
def test_the_relay_delivers_through_mns_and_retries_only_the_refused_event(
    db: firestore.Client, settings: Settings, server: MnsServer
) -> None:
    event_ids = add_orders(db, settings, 6)
    server.entry_errors = {event_ids[2]: "InternalError"}
    key = AccessKeySettings(access_key_id=KEY_ID, access_key_secret=SECRET, security_token=TOKEN)
    mns = MnsSettings(endpoint=server.endpoint, queue="orders", access_key=key)
    relay = Relay(db, settings, dataclasses.replace(FAST, publisher=mns))

    first = relay.run()
    assert first["processed"] == 5
    server.entry_errors = {}
    run_until(relay, lambda: all(e["status"] == "PROCESSED" for e in outbox(db, settings).values()))

    stored = [s.event_id for s in server.stored]
    assert sorted(stored) == event_ids  # each event stored once: only the refused one resent
    assert server.batches[-1] == [event_ids[2]]
    assert outbox(db, settings)[event_ids[2]]["attempts"] == 2
