"""`HttpPublisher` against a real local HTTP server (no Firestore needed)."""

from __future__ import annotations

import time
from importlib.metadata import version

import pytest

from firestore_outbox.consumer.events import verify_request
from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.http.publisher import HttpPublisher
from firestore_outbox.publishers.http.settings import HttpSettings
from firestore_outbox.publishers.registry import publisher_for
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.signing import InvalidSignature
from firestore_outbox.testing.emulator import free_port

DELIVERY = Delivery("e-1", "OrderCreated", "/shop", "o-1", "2026-11-21T08:00:00Z", b'{"a":1}', 1)


def publisher(url: str, read_timeout: float = 2.0) -> HttpPublisher:
    return HttpPublisher(url, connect_timeout=1.0, read_timeout=read_timeout, pool_size=4)


def test_one_keep_alive_connection_carries_many_deliveries(receiver: Receiver) -> None:
    http = publisher(receiver.url)
    results = [http.publish(DELIVERY) for _ in range(20)]
    assert {r.outcome for r in results} == {Outcome.DELIVERED}
    assert len({r.peer for r in receiver.received}) == 1
    request = receiver.received[0]
    assert request.body == b'{"a":1}' and request.headers["ce-id"] == "e-1"
    # The installed package's version (before: "0.2" whatever the release).
    assert request.headers["user-agent"] == f"firestore-outbox-relay/{version('firestore-outbox')}"


def test_a_redirect_is_not_followed(receiver: Receiver) -> None:
    receiver.respond = lambda _: ReceiverAnswer(
        302, (("Location", "http://127.0.0.1:9/elsewhere"),)
    )
    result = publisher(receiver.url).publish(DELIVERY)
    assert result.outcome is Outcome.RETRY and result.error == "HTTP 302"
    assert len(receiver.received) == 1


def test_a_slow_answer_times_out_and_names_no_secret(receiver: Receiver) -> None:
    def slow(_: Received) -> ReceiverAnswer:
        time.sleep(1.0)
        return ReceiverAnswer(200)

    receiver.respond = slow
    url = receiver.url + "?key=hunter2"
    started = time.monotonic()
    result = publisher(url, read_timeout=0.3).publish(DELIVERY)
    assert time.monotonic() - started < 0.9
    assert result.outcome is Outcome.RETRY and result.error
    assert result.error.startswith("timeout: ReadTimeout") and "hunter2" not in result.error


def test_a_refused_connection_is_the_channels_fault_and_names_no_secret() -> None:
    url = f"http://user:hunter2@127.0.0.1:{free_port()}/hooks/hunter2?sig=hunter2"
    result = publisher(url).publish(DELIVERY)
    assert result.outcome is Outcome.CHANNEL and result.error
    assert result.error.startswith("ConnectionError") and "hunter2" not in result.error


def test_retry_after_and_the_answer_body_are_reported(receiver: Receiver) -> None:
    receiver.respond = lambda _: ReceiverAnswer(
        503, (("Retry-After", "9"),), b"down for\nmaintenance"
    )
    result = publisher(receiver.url).publish(DELIVERY)
    assert (result.outcome, result.retry_after) == (Outcome.RETRY, 9.0)
    assert result.error == "HTTP 503: down for maintenance"


def test_the_configured_secret_signs_the_exact_body_sent(receiver: Receiver) -> None:
    secret = "whsec-0123456789abcdef"
    config = RelayConfig(publisher=HttpSettings(url=receiver.url), signing_secrets=(secret,))
    publisher = publisher_for(config.publisher, config.publisher_options())
    assert publisher.publish(DELIVERY).outcome is Outcome.DELIVERED
    [request] = receiver.received
    assert request.headers["webhook-signature"].startswith("v1,")
    assert verify_request(request.headers, request.body, [secret]).data == request.body
    with pytest.raises(InvalidSignature):
        verify_request(request.headers, request.body + b" ", [secret])


def test_without_a_secret_no_signature_is_sent(receiver: Receiver) -> None:
    config = RelayConfig(publisher=HttpSettings(url=receiver.url))
    publisher_for(config.publisher, config.publisher_options()).publish(DELIVERY)
    assert "webhook-signature" not in receiver.received[0].headers
