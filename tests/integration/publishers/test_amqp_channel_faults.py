"""`AmqpPublisher`: a missing exchange, a refused login, no broker or a server that never
speaks AMQP are the channel's fault (not the event's), the password never shown."""

from __future__ import annotations

import socket
import time

from firestore_outbox.publishers.amqp.publisher import AmqpPublisher, AmqpTarget
from firestore_outbox.publishers.base import Outcome
from tests.support.amqp_publishing import DELIVERY, publisher
from tests.support.rabbitmq import Broker


def test_a_missing_exchange_is_the_channels_fault(rabbitmq: Broker, unique: str) -> None:
    result = publisher(rabbitmq.url, f"nowhere-{unique}", "k").publish(DELIVERY)

    assert result.outcome is Outcome.CHANNEL
    assert result.error is not None and "NOT_FOUND" in result.error


def test_a_refused_login_is_the_channels_fault_and_never_shows_the_password(
    rabbitmq: Broker,
) -> None:
    url = rabbitmq.url.replace("guest:guest", "guest:wr0ng-pa55word")

    result = publisher(url, "", "k").publish(DELIVERY)

    assert result.outcome is Outcome.CHANNEL
    assert result.error is not None and "wr0ng-pa55word" not in result.error


def test_no_broker_is_the_channels_fault() -> None:
    from firestore_outbox.testing.emulator import free_port

    url = f"amqp://guest:guest@127.0.0.1:{free_port()}/%2F"
    result = publisher(url, "", "k").publish(DELIVERY)

    assert result.outcome is Outcome.CHANNEL
    assert result.error is not None and result.error.startswith("ConnectionError: AMQP")


def test_a_server_that_never_speaks_amqp_is_the_channels_fault_by_the_connect_timeout() -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # connections complete in the backlog; nobody ever answers
    url = f"amqp://guest:guest@127.0.0.1:{silent.getsockname()[1]}/%2F"
    amqp = AmqpPublisher(AmqpTarget(url=url), connect_timeout=0.5, read_timeout=5)
    try:
        started = time.monotonic()
        result = amqp.publish(DELIVERY)
        waited = time.monotonic() - started
    finally:
        silent.close()

    assert result.outcome is Outcome.CHANNEL
    assert result.error is not None and "no AMQP connection by the deadline" in result.error
    assert waited < 2.0  # the connect timeout, not the 5.5 s attempt bound
