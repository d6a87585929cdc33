"""The re-drive marker on the wire: absent from a live delivery (whose digest is unchanged),
present and signed in both modes on a replay, and refused when stripped or forged."""

from __future__ import annotations

import time

import pytest

from firestore_outbox.consumer.events import verify_event, verify_request
from firestore_outbox.publishers.base import Delivery, cloudevent_attributes, cloudevent_headers
from firestore_outbox.publishers.fc.shared import signed_cloudevent
from firestore_outbox.signing import SIGNED_ATTRIBUTES, InvalidSignature, Signer, event_digest

SECRET = "marker-test-secret-0123456789"
LIVE = Delivery("e-1", "OrderPaid", "//src", "order-1", "2026-11-01T08:00:00Z", b"{}", 1)
REPLAY = Delivery(
    "e-1", "OrderPaid", "//src", "order-1", "2026-11-01T08:00:00Z", b"{}", 1, replay="job-7"
)


def signed_headers(delivery: Delivery) -> dict[str, str]:
    signature = Signer([SECRET]).sign(cloudevent_attributes(delivery), delivery.body)
    return {**cloudevent_headers(delivery), **signature.headers()}


def test_a_live_delivery_has_no_marker_and_the_digest_it_always_had() -> None:
    assert "ce-outboxreplay" not in cloudevent_headers(LIVE)
    attributes = cloudevent_attributes(LIVE)
    signed_only = {name: attributes[name] for name in SIGNED_ATTRIBUTES}
    assert event_digest(attributes) == event_digest(signed_only)
    assert event_digest(cloudevent_attributes(REPLAY)) != event_digest(attributes)


def test_a_replay_carries_the_signed_marker_in_binary_and_structured_mode() -> None:
    headers = signed_headers(REPLAY)
    assert headers["ce-outboxreplay"] == "job-7"
    assert verify_request(headers, REPLAY.body, [SECRET]).attributes["outboxreplay"] == "job-7"
    structured = signed_cloudevent(REPLAY, Signer([SECRET]))
    assert verify_event(structured, [SECRET]).attributes["outboxreplay"] == "job-7"


@pytest.mark.parametrize(
    "edit",
    [
        lambda h: {k: v for k, v in h.items() if k != "ce-outboxreplay"},  # stripped
        lambda h: {**h, "ce-outboxreplay": "job-8"},  # another job's
    ],
)
def test_a_stripped_or_changed_marker_fails_verification(edit: object) -> None:
    with pytest.raises(InvalidSignature, match="do not match"):
        verify_request(edit(signed_headers(REPLAY)), REPLAY.body, [SECRET])  # type: ignore[operator]


def test_a_marker_added_to_a_live_delivery_fails_verification() -> None:
    forged = {**signed_headers(LIVE), "ce-outboxreplay": "job-7"}
    with pytest.raises(InvalidSignature, match="do not match"):
        verify_request(forged, LIVE.body, [SECRET], now=time.time())
