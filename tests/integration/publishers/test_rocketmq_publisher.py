"""`RocketMqPublisher` through the real `rocketmq-python-client` against a local gRPC
MessagingService built from the client's own protos (tests/support/rocketmq_server.py), which checks
each call's signature and keeps what it was sent."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import pytest
from google.cloud import firestore
from rocketmq.grpc_protocol import definition_pb2 as d

from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.registry import publisher_for
from firestore_outbox.publishers.rocketmq.publisher import RocketMqPublisher, RocketMqTarget
from firestore_outbox.publishers.rocketmq.settings import RocketMqSettings
from firestore_outbox.relay import Relay
from firestore_outbox.signing import Signer
from tests.support.helpers import FAST, add_orders, outbox, run_until
from tests.support.rocketmq_server import ACCESS_KEY, SECRET_KEY, RocketMqServer


def delivery(n: int, aggregate: str | None = None) -> Delivery:
    body = json.dumps({"orderId": f"o-{n}"}).encode()
    subject = aggregate or f"o-{n}"
    return Delivery(f"e-{n}", "OrderCreated", "/shop", subject, "2026-11-22T08:00:00Z", body, 1)


@pytest.fixture
def server() -> Iterator[RocketMqServer]:
    server = RocketMqServer().start()
    yield server
    server.stop()


@pytest.fixture
def make(server: RocketMqServer) -> Iterator[object]:
    made: list[RocketMqPublisher] = []

    def make(signer: Signer | None = None, **changes: object) -> RocketMqPublisher:
        target = RocketMqTarget(
            endpoints=server.endpoints,
            topic="orders",
            access_key=ACCESS_KEY,
            secret_key=SECRET_KEY,
        )
        publisher = RocketMqPublisher(
            dataclasses.replace(target, **changes), timeout=3.0, signer=signer
        )
        made.append(publisher)
        return publisher

    yield make
    for publisher in made:
        publisher.close()


def test_a_message_carries_the_event_id_as_key_and_the_cloudevent_as_properties(
    server: RocketMqServer, make: object
) -> None:
    result = make().publish(delivery(1))  # type: ignore[operator]

    assert result.outcome is Outcome.DELIVERED
    [sent] = server.sent
    assert (sent.topic, sent.keys, sent.message_group) == ("orders", ["e-1"], "")
    assert sent.message_type == d.NORMAL
    assert json.loads(sent.body) == {"orderId": "o-1"}
    assert sent.properties == {
        "CE_specversion": "1.0",
        "CE_id": "e-1",
        "CE_type": "OrderCreated",
        "CE_source": "/shop",
        "CE_subject": "o-1",
        "CE_time": "2026-11-22T08:00:00Z",
        "CE_contenttype": "application/json",
    }
    assert server.refused_signatures == 0


def test_a_fifo_topic_gets_the_aggregate_id_as_message_group_in_send_order(
    server: RocketMqServer, make: object
) -> None:
    server.accept = d.FIFO
    publisher = make(fifo=True)  # type: ignore[operator]
    for n in range(4):
        assert publisher.publish(delivery(n, aggregate="order-9")).outcome is Outcome.DELIVERED

    assert [s.keys[0] for s in server.sent] == ["e-0", "e-1", "e-2", "e-3"]
    assert {s.message_group for s in server.sent} == {"order-9"}
    assert {s.message_type for s in server.sent} == {d.FIFO}


def test_a_fifo_flag_that_does_not_match_the_topic_is_the_channels_fault(
    server: RocketMqServer, make: object
) -> None:
    server.accept = d.FIFO
    result = make().publish(delivery(1))  # type: ignore[operator]
    assert result.outcome is Outcome.CHANNEL
    assert server.sent == []


@pytest.mark.parametrize(
    ("code", "outcome"),
    [
        (d.FORBIDDEN, Outcome.CHANNEL),
        (d.TOPIC_NOT_FOUND, Outcome.CHANNEL),
        (d.BAD_REQUEST, Outcome.REJECTED),
        (d.MESSAGE_BODY_TOO_LARGE, Outcome.REJECTED),
        (d.TOO_MANY_REQUESTS, Outcome.RETRY),
        (d.INTERNAL_ERROR, Outcome.RETRY),
        (d.PROXY_TIMEOUT, Outcome.RETRY),
    ],
)
def test_a_refused_send_is_classified_by_its_status_code(
    server: RocketMqServer, make: object, code: int, outcome: Outcome
) -> None:
    server.codes = {"e-1": code}
    publisher = make()  # type: ignore[operator]

    assert publisher.publish(delivery(1)).outcome is outcome
    assert publisher.publish(delivery(2)).outcome is Outcome.DELIVERED  # only that event
    assert [s.keys for s in server.sent] == [["e-2"]]


def test_a_wrong_password_is_a_broken_channel_that_names_no_secret(
    server: RocketMqServer, make: object
) -> None:
    result = make(secret_key="wrong-password").publish(delivery(1))  # type: ignore[operator]
    assert result.outcome is Outcome.CHANNEL
    assert "wrong-password" not in (result.error or "")
    assert server.sent == []


def test_an_unreachable_proxy_is_a_broken_channel(make: object) -> None:
    result = make(endpoints="127.0.0.1:9").publish(delivery(1))  # type: ignore[operator]
    assert result.outcome is Outcome.CHANNEL


def test_signed_messages_carry_the_signature_attributes(
    server: RocketMqServer, make: object
) -> None:
    secret = "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    assert make(Signer([secret])).publish(delivery(3)).outcome is Outcome.DELIVERED  # type: ignore[operator]
    [sent] = server.sent
    assert {"webhookid", "webhooktimestamp", "webhooksignature"} <= set(sent.properties)


@pytest.mark.emulator
def test_the_relay_delivers_through_rocketmq(
    db: firestore.Client, settings: Settings, server: RocketMqServer
) -> None:
    event_ids = add_orders(db, settings, 4)
    rocketmq = RocketMqSettings(
        endpoints=server.endpoints, topic="orders", access_key=ACCESS_KEY, secret_key=SECRET_KEY
    )
    config = dataclasses.replace(FAST, publisher=rocketmq)
    publisher = publisher_for(
        config.publisher, config.publisher_options()
    )  # as the relay would build it, closed here at the end
    assert isinstance(publisher, RocketMqPublisher)
    try:
        relay = Relay(db, settings, config, publisher=publisher)
        run_until(
            relay, lambda: all(e["status"] == "PROCESSED" for e in outbox(db, settings).values())
        )
    finally:
        publisher.close()  # its heartbeat and telemetry threads stop with it
    assert sorted(s.keys[0] for s in server.sent) == event_ids
