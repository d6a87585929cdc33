"""The local FC 2.0 invoke endpoint (`tests/support/fc_server.py`) the benchmark times the `fc`
publisher against: it takes what `FcPublisher` signs, and refuses what it must."""

from __future__ import annotations

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.fc.fc2 import FcPublisher, FcTarget
from tests.support.fc_server import FcEndpoint

DELIVERY = Delivery("e-1", "OrderCreated", "/shop", "o-1", "2026-11-22T08:00:00Z", b'{"n":1}', 1)
KEYS = {"AKID": "fc-s3cret-key"}


def invoke(endpoint: FcEndpoint, *, secret: str = "fc-s3cret-key", function: str = "f") -> Outcome:
    with Receiver(endpoint) as receiver:
        target = FcTarget(
            endpoint=receiver.url.removesuffix("/events"),
            service="orders",
            function=function,
            qualifier="LATEST",
            access_key_id="AKID",
            access_key_secret=secret,
            security_token="sts-t0ken",
        )
        publisher = FcPublisher(target, connect_timeout=1, read_timeout=2)
        try:
            return publisher.publish(DELIVERY).outcome
        finally:
            publisher.close()


def test_a_signed_invocation_of_a_known_function_is_accepted() -> None:
    endpoint = FcEndpoint(KEYS, {("orders", "f")}, security_token="sts-t0ken")
    assert invoke(endpoint) is Outcome.DELIVERED
    assert (endpoint.invocations, endpoint.refused) == (1, [])


def test_a_request_signed_with_another_secret_is_refused() -> None:
    endpoint = FcEndpoint(KEYS, {("orders", "f")})
    assert invoke(endpoint, secret="not-the-s3cret") is Outcome.CHANNEL
    assert (endpoint.invocations, endpoint.refused) == (0, ["SignatureNotMatch"])


def test_a_wrong_token_or_an_unknown_function_is_refused() -> None:
    endpoint = FcEndpoint(KEYS, {("orders", "f")}, security_token="another-t0ken")
    assert invoke(endpoint) is Outcome.CHANNEL
    unknown = FcEndpoint(KEYS, {("orders", "f")})
    assert invoke(unknown, function="g") is Outcome.CHANNEL
    assert endpoint.refused + unknown.refused == ["InvalidSecurityToken", "FunctionNotFound"]
