"""The trace context travels with the event through the message services, as the CloudEvents
distributed-tracing extension says: attributes of a structured CloudEvent (EventBridge) and
message properties (MNS, RocketMQ), each server a local one speaking the service's real API."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from firestore_outbox.publishers.base import Delivery, Outcome
from tests.integration.publishers import test_eventbridge_publisher as eventbridge
from tests.integration.publishers import test_mns_publisher as mns
from tests.integration.publishers import test_rocketmq_publisher as rocketmq
from tests.support.eventbridge_server import EventBridgeServer
from tests.support.mns_server import MnsServer
from tests.support.rocketmq_server import RocketMqServer

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def traced(n: int) -> Delivery:
    return dataclasses.replace(mns.delivery(n), traceparent=PARENT, tracestate="sls=1")


@pytest.fixture
def mns_server() -> Iterator[MnsServer]:
    server = MnsServer().start()
    yield server
    server.stop()


@pytest.fixture
def eventbridge_server() -> Iterator[EventBridgeServer]:
    server = EventBridgeServer().start()
    yield server
    server.stop()


def test_an_mns_message_carries_the_trace_context_as_properties(mns_server: MnsServer) -> None:
    result = mns.publisher(mns_server).publish(traced(1))

    assert result.outcome is Outcome.DELIVERED
    [stored] = mns_server.stored
    assert (stored.properties["ce_traceparent"], stored.properties["ce_tracestate"]) == (
        PARENT,
        "sls=1",
    )


def test_an_eventbridge_event_carries_the_trace_context_as_attributes(
    eventbridge_server: EventBridgeServer,
) -> None:
    result = eventbridge.publisher(eventbridge_server).publish(traced(1))

    assert result.outcome is Outcome.DELIVERED
    [event] = eventbridge_server.events
    assert (event["traceparent"], event["tracestate"]) == (PARENT, "sls=1")


@pytest.fixture
def rocketmq_server() -> Iterator[RocketMqServer]:
    server = RocketMqServer().start()
    yield server
    server.stop()


def test_a_rocketmq_message_carries_the_trace_context_as_properties(
    rocketmq_server: RocketMqServer,
) -> None:
    publisher = rocketmq.RocketMqPublisher(
        rocketmq.RocketMqTarget(
            endpoints=rocketmq_server.endpoints,
            topic="orders",
            access_key=rocketmq.ACCESS_KEY,
            secret_key=rocketmq.SECRET_KEY,
        ),
        timeout=3.0,
    )
    try:
        result = publisher.publish(traced(1))
    finally:
        publisher.close()

    assert result.outcome is Outcome.DELIVERED
    [sent] = rocketmq_server.sent
    assert (sent.properties["CE_traceparent"], sent.properties["CE_tracestate"]) == (
        PARENT,
        "sls=1",
    )
