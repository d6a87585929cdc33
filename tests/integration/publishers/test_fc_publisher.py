"""`FcPublisher` against a local HTTP server playing Function Compute's invoke endpoint."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json

import pytest

from firestore_outbox.consumer.events import verify_event
from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.fc.fc2 import FcPublisher, FcTarget
from firestore_outbox.publishers.fc.settings import FcSettings
from firestore_outbox.publishers.registry import publisher_for
from firestore_outbox.publishers.settings import AccessKeySettings
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.signing import SIGNATURE_ATTRIBUTE, InvalidSignature, Signer

SECRET, TOKEN = "fc-s3cret-key", "sts-t0ken"
DELIVERY = Delivery("e-7", "OrderCreated", "/shop", "o-7", "2026-11-21T08:00:00Z", b'{"n":1}', 1)


def publisher(endpoint: str, **changes: object) -> FcPublisher:
    target = FcTarget(
        endpoint=endpoint,
        service="orders",
        function="on-order-created",
        access_key_id="AKID",
        access_key_secret=SECRET,
        security_token=TOKEN,
    )
    target = FcTarget(**{**target.__dict__, **changes})
    return FcPublisher(target, connect_timeout=1, read_timeout=2)


def endpoint(receiver: Receiver) -> str:
    return receiver.url.removesuffix("/events")


def expected_signature(request: Received) -> str:
    """Function Compute's signature, computed here from its documented recipe."""
    h = request.headers
    fc_headers = "".join(f"{k}:{h[k]}\n" for k in sorted(h) if k.startswith("x-fc-"))
    text = "\n".join(
        ["POST", h.get("content-md5", ""), h["content-type"], h["date"], fc_headers + request.path]
    )
    digest = hmac.new(SECRET.encode(), text.encode(), hashlib.sha256).digest()
    return "FC AKID:" + base64.b64encode(digest).decode()


def test_an_invocation_is_signed_asynchronous_and_carries_the_event(receiver: Receiver) -> None:
    result = publisher(endpoint(receiver)).publish(DELIVERY)

    assert result.outcome is Outcome.DELIVERED
    [request] = receiver.received
    assert request.path == "/2016-08-15/services/orders/functions/on-order-created/invocations"
    assert request.headers["authorization"] == expected_signature(request)
    assert request.headers["x-fc-invocation-type"] == "Async"
    assert request.headers["x-fc-security-token"] == TOKEN
    assert request.json() == {
        "specversion": "1.0",
        "id": "e-7",
        "type": "OrderCreated",
        "source": "/shop",
        "subject": "o-7",
        "time": "2026-11-21T08:00:00Z",
        "datacontenttype": "application/json",
        "data": {"n": 1},
    }


def test_a_qualifier_and_sync_invocation(receiver: Receiver) -> None:
    publisher(endpoint(receiver), qualifier="prod", asynchronous=False).publish(DELIVERY)
    [request] = receiver.received
    assert request.path.startswith("/2016-08-15/services/orders.prod/functions/")
    assert request.headers["x-fc-invocation-type"] == "Sync"
    assert request.headers["authorization"] == expected_signature(request)


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        (ReceiverAnswer(202), Outcome.DELIVERED),
        (
            ReceiverAnswer(
                429, body=b'{"ErrorCode":"ResourceThrottled","ErrorMessage":"slow down"}'
            ),
            Outcome.RETRY,
        ),
        (ReceiverAnswer(503, body=b"<html>bad gateway</html>"), Outcome.RETRY),  # not JSON
        (ReceiverAnswer(500, body=b'{"ErrorCode":"InternalServerError"}'), Outcome.RETRY),
        (ReceiverAnswer(404, body=b'{"ErrorCode":"FunctionNotFound"}'), Outcome.CHANNEL),
        (ReceiverAnswer(403, body=b"denied"), Outcome.CHANNEL),  # not JSON
        (ReceiverAnswer(400, body=b"bad"), Outcome.REJECTED),
        (ReceiverAnswer(200, (("X-Fc-Error-Type", "UnhandledInvocationError"),)), Outcome.RETRY),
    ],
)
def test_answers_are_classified_like_http_deliveries(
    receiver: Receiver, answer: ReceiverAnswer, outcome: Outcome
) -> None:
    receiver.respond = lambda _: answer
    result = publisher(endpoint(receiver)).publish(DELIVERY)
    assert result.outcome is outcome
    if outcome is not Outcome.DELIVERED:
        assert result.error and result.error.startswith(f"HTTP {answer.status}")
        if answer.body:
            assert json.dumps(answer.body.decode()[:20])[1:-1] in json.dumps(result.error)


def test_no_credential_reaches_an_error(receiver: Receiver) -> None:
    receiver.respond = lambda r: ReceiverAnswer(
        400, body=f"bad token {TOKEN} key {SECRET}".encode()
    )
    result = publisher(endpoint(receiver)).publish(DELIVERY)
    assert result.error and TOKEN not in result.error and SECRET not in result.error


def test_configuration_selects_the_fc_publisher() -> None:
    config = RelayConfig(
        publisher=FcSettings(
            endpoint="https://123.cn-hangzhou.fc.aliyuncs.com",
            service="orders",
            function="f",
            access_key=AccessKeySettings(access_key_id="AKID", access_key_secret=SECRET),
        )
    )
    assert isinstance(publisher_for(config.publisher, config.publisher_options()), FcPublisher)
    assert SECRET not in repr(config)


def test_a_signed_event_carries_its_signature_inside_and_verifies(receiver: Receiver) -> None:
    signing = "whsec-0123456789abcdef"
    target = FcTarget(
        endpoint=endpoint(receiver),
        service="s",
        function="f",
        access_key_id="A",
        access_key_secret=SECRET,
    )
    fc = FcPublisher(target, connect_timeout=1, read_timeout=2, signer=Signer([signing]))
    assert fc.publish(DELIVERY).outcome is Outcome.DELIVERED
    [request] = receiver.received
    assert request.json()[SIGNATURE_ATTRIBUTE].startswith("v1,")
    assert request.json()["data"] == {"n": 1}
    assert verify_event(request.body, [signing]).data == b'{"n":1}'
    with pytest.raises(InvalidSignature, match="no signature matches"):
        verify_event(request.body.replace(b'"n":1', b'"n":2'), [signing])
    with pytest.raises(InvalidSignature, match="no signature matches"):
        verify_event(request.body, ["whsec-another-secret-0"])
    unsigned = publisher(endpoint(receiver)).publish(DELIVERY)
    assert unsigned.outcome is Outcome.DELIVERED
    with pytest.raises(InvalidSignature, match="missing"):
        verify_event(receiver.received[1].body, [signing])
