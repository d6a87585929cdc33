"""Interop: deliveries the relay's publishers really send verify with the independent
`standardwebhooks` library (PyPI), and forgeries fail with it and with ours."""

from __future__ import annotations

import base64
import hashlib

import pytest
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from firestore_outbox.consumer.events import verify_event, verify_request
from firestore_outbox.consumer.receiver import Received, Receiver
from firestore_outbox.publishers.base import Delivery, Outcome
from firestore_outbox.publishers.fc.fc2 import FcPublisher, FcTarget
from firestore_outbox.publishers.http.publisher import HttpPublisher
from firestore_outbox.signing import InvalidSignature, Signer

PLAIN = "a-plain-secret-of-v1-days"  # today's form: its UTF-8 bytes are the key
STANDARD = "whsec_" + base64.b64encode(bytes(range(32))).decode()
DELIVERY = Delivery(
    "e-1", "OrderCreated", "/shop", "o-1", "2026-11-21T08:00:00Z", b'{"customerId":"c-1"}', 1
)


def digest_from_the_readme(attributes: dict[str, str]) -> str:
    """What a consumer in another language writes from the README: the webhook-id check."""
    names = ["specversion", "id", "source", "type", "subject", "time", "datacontenttype"]
    lines = "".join(f"{n}={len(attributes[n].encode())}:{attributes[n]}\n" for n in names)
    digest = hashlib.sha256(lines.encode()).digest()
    return "ce_" + base64.urlsafe_b64encode(digest).decode().rstrip("=")


def sent_over_http(receiver: Receiver, *secrets: str) -> Received:
    http = HttpPublisher(receiver.url, connect_timeout=1, read_timeout=2, signer=Signer(secrets))
    assert http.publish(DELIVERY).outcome is Outcome.DELIVERED
    return receiver.received[-1]


def attributes_of(request: Received) -> dict[str, str]:
    found = {k[3:]: v for k, v in request.headers.items() if k.startswith("ce-")}
    return {**found, "datacontenttype": request.headers["content-type"]}


@pytest.mark.parametrize("secret", [STANDARD, PLAIN], ids=["whsec", "plain"])
def test_a_genuine_http_delivery_verifies_with_the_standard_library(
    receiver: Receiver, secret: str
) -> None:
    request = sent_over_http(receiver, secret)
    # The library takes whsec_ secrets as they are, and a plain secret as its key bytes.
    webhook = Webhook(secret if secret.startswith("whsec_") else secret.encode())
    assert webhook.verify(request.body, request.headers) == {"customerId": "c-1"}
    assert request.headers["webhook-id"] == digest_from_the_readme(attributes_of(request))
    assert verify_request(request.headers, request.body, [secret]).data == request.body


def test_rotation_each_secret_verifies_with_the_standard_library(receiver: Receiver) -> None:
    request = sent_over_http(receiver, STANDARD, PLAIN)
    assert Webhook(STANDARD).verify(request.body, request.headers)
    assert Webhook(PLAIN.encode()).verify(request.body, request.headers)


def test_forgeries_fail_with_the_standard_library_and_with_ours(receiver: Receiver) -> None:
    request = sent_over_http(receiver, STANDARD)
    webhook = Webhook(STANDARD)
    altered_body = request.body.replace(b"c-1", b"c-2")
    with pytest.raises(WebhookVerificationError):
        webhook.verify(altered_body, request.headers)
    with pytest.raises(InvalidSignature):
        verify_request(request.headers, altered_body, [STANDARD])
    # An edited attribute with a webhook-id to match: the library sees a changed id.
    swapped = {**attributes_of(request), "type": "OrderCancelled"}
    forged = {**request.headers, "ce-type": "OrderCancelled"}
    forged["webhook-id"] = digest_from_the_readme(swapped)
    with pytest.raises(WebhookVerificationError):
        webhook.verify(request.body, forged)
    with pytest.raises(InvalidSignature):
        verify_request(forged, request.body, [STANDARD])
    # An edited attribute under the genuine id: the library alone passes it (it signs no
    # attributes); the digest check the README asks for refuses it, as ours does.
    replayed = {**request.headers, "ce-type": "OrderCancelled"}
    assert webhook.verify(request.body, replayed)
    assert replayed["webhook-id"] != digest_from_the_readme(swapped)
    with pytest.raises(InvalidSignature, match="do not match its webhook-id"):
        verify_request(replayed, request.body, [STANDARD])


def test_a_function_compute_event_verifies_with_the_standard_library(receiver: Receiver) -> None:
    target = FcTarget(
        endpoint=receiver.url.rsplit("/", 1)[0],
        service="s",
        function="f",
        access_key_id="A",
        access_key_secret="fc-secret",
    )
    fc = FcPublisher(target, connect_timeout=1, read_timeout=2, signer=Signer([STANDARD]))
    assert fc.publish(DELIVERY).outcome is Outcome.DELIVERED
    event = receiver.received[-1].body
    envelope = receiver.received[-1].json()
    # As the README says: the signed body is the bytes of `data`, the last member.
    data = event[event.index(b',"data":') + len(b',"data":') : -1]
    headers = {
        "webhook-id": envelope["webhookid"],
        "webhook-timestamp": envelope["webhooktimestamp"],
        "webhook-signature": envelope["webhooksignature"],
    }
    assert Webhook(STANDARD).verify(data, headers) == {"customerId": "c-1"}
    attributes = {k: v for k, v in envelope.items() if k != "data"}
    assert headers["webhook-id"] == digest_from_the_readme(attributes)
    assert verify_event(event, [STANDARD]).data == data
    with pytest.raises(WebhookVerificationError):
        Webhook(STANDARD).verify(data.replace(b"c-1", b"c-2"), headers)
