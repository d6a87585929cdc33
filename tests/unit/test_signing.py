"""Signatures, version 2: what the relay sends passes; anything stale, altered, missing or
wrongly signed fails, and so does a replay that edits any attribute a consumer acts on."""

from __future__ import annotations

import base64
import hashlib
import hmac
import subprocess
import sys

import pytest

from firestore_outbox.consumer.events import verify_request
from firestore_outbox.signing import (
    InvalidSignature,
    Signer,
    event_digest,
    parse_secrets,
    secret_key,
    verify,
)

SECRET, OTHER = "whsec-0123456789abcdef", "whsec-fedcba9876543210"
NOW = 1_763_712_000
BODY = b'{"orderId":"o-1","customerId":"c-1"}'
ATTRIBUTES = {
    "specversion": "1.0",
    "id": "e-1",
    "source": "/shop",
    "type": "OrderCreated",
    "subject": "o-1",
    "time": "2026-11-21T08:00:00.000000Z",
    "datacontenttype": "application/json",
}


def headers(*secrets: str, at: int = NOW, **changes: str) -> dict[str, str]:
    """A binary-mode delivery as the HTTP publisher sends it, then `changes` applied."""
    signature = Signer(secrets or [SECRET]).sign(ATTRIBUTES, BODY, timestamp=at)
    sent = {f"ce-{name}": value for name, value in ATTRIBUTES.items() if name != "datacontenttype"}
    sent["Content-Type"] = ATTRIBUTES["datacontenttype"]
    return {**sent, **signature.headers(), **changes}


def canonical_digest(attributes: dict[str, str]) -> str:
    """The README's recipe for webhook-id, written out independently of firestore_outbox.signing."""
    names = ["specversion", "id", "source", "type", "subject", "time", "datacontenttype"]
    lines = "".join(f"{n}={len(attributes[n].encode())}:{attributes[n]}\n" for n in names)
    digest = hashlib.sha256(lines.encode()).digest()
    return "ce_" + base64.urlsafe_b64encode(digest).decode().rstrip("=")


def test_a_valid_delivery_passes_and_the_consumer_gets_what_was_signed() -> None:
    event = verify_request(headers(), BODY, [SECRET], now=NOW)
    assert (event.mode, event.attributes, event.data) == ("binary", ATTRIBUTES, BODY)


def test_the_signature_is_standard_webhooks_over_the_attribute_digest() -> None:
    sent = headers()
    assert sent["webhook-id"] == canonical_digest(ATTRIBUTES)
    assert sent["webhook-timestamp"] == str(NOW)
    content = f"{sent['webhook-id']}.{NOW}.".encode() + BODY
    mac = hmac.new(SECRET.encode(), content, hashlib.sha256).digest()
    assert sent["webhook-signature"] == "v1," + base64.b64encode(mac).decode()


@pytest.mark.parametrize("name", sorted(ATTRIBUTES))
def test_webhook_id_is_stable_and_changes_with_every_attribute(name: str) -> None:
    assert event_digest(dict(ATTRIBUTES)) == event_digest(ATTRIBUTES)
    assert event_digest({**ATTRIBUTES, name: ATTRIBUTES[name] + "x"}) != event_digest(ATTRIBUTES)
    # Lengths make the lines unambiguous: a newline cannot move text between attributes.
    moved = {**ATTRIBUTES, "subject": "o-1\ntime=5:x", "time": "y"}
    assert event_digest(moved) != event_digest({**ATTRIBUTES, "subject": "o-1", "time": "y"})


@pytest.mark.parametrize(
    "body",
    [BODY + b" ", BODY.replace(b"c-1", b"c-2"), b"", BODY[:-1]],
    ids=["trailing-space", "changed-value", "empty", "truncated"],
)
def test_an_altered_body_fails(body: bytes) -> None:
    with pytest.raises(InvalidSignature, match="no signature matches"):
        verify_request(headers(), body, [SECRET], now=NOW)


def test_a_wrong_secret_fails() -> None:
    with pytest.raises(InvalidSignature, match="no signature matches"):
        verify_request(headers(OTHER), BODY, [SECRET], now=NOW)


@pytest.mark.parametrize(
    "change",
    [
        {"ce-id": "e-2"},
        {"ce-source": "/elsewhere"},
        {"ce-type": "OrderCancelled"},
        {"ce-subject": "o-2"},
        {"ce-time": "2020-01-01T00:00:00Z"},
        {"ce-specversion": "0.3"},
        {"Content-Type": "text/plain"},
    ],
    ids=lambda change: next(iter(change)),
)
def test_a_replay_with_another_event_identity_fails(change: dict[str, str]) -> None:
    # Every attribute a consumer acts on is bound to the signed webhook-id.
    with pytest.raises(InvalidSignature, match="attributes do not match its webhook-id"):
        verify_request(headers(**change), BODY, [SECRET], now=NOW)


def test_a_replay_with_an_edited_webhook_id_fails() -> None:
    forged = headers(**{"webhook-id": event_digest({**ATTRIBUTES, "type": "OrderCancelled"})})
    with pytest.raises(InvalidSignature, match="no signature matches"):
        verify_request({**forged, "ce-type": "OrderCancelled"}, BODY, [SECRET], now=NOW)


def test_a_stale_timestamp_fails_even_with_a_valid_mac() -> None:
    with pytest.raises(InvalidSignature, match="outside the tolerance of 300 s"):
        verify_request(headers(at=NOW - 301), BODY, [SECRET], now=NOW)


def test_an_edited_timestamp_fails() -> None:
    forged = headers(at=NOW - 1000, **{"webhook-timestamp": str(NOW)})
    with pytest.raises(InvalidSignature, match="no signature matches"):
        verify_request(forged, BODY, [SECRET], now=NOW)


def test_clock_skew_within_the_tolerance_passes_beyond_it_fails() -> None:
    assert verify_request(headers(at=NOW + 200), BODY, [SECRET], now=NOW)
    assert verify_request(headers(at=NOW - 200), BODY, [SECRET], now=NOW)
    with pytest.raises(InvalidSignature, match=r"\(-400 s from the receiver's clock\)"):
        verify_request(headers(at=NOW + 400), BODY, [SECRET], now=NOW)
    assert verify_request(headers(at=NOW + 400), BODY, [SECRET], now=NOW, tolerance=500)


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("webhook-signature", None, "missing webhook-signature"),
        ("webhook-id", "", "missing webhook-id"),
        ("webhook-timestamp", None, "missing webhook-timestamp"),
        ("webhook-timestamp", "soon", "malformed webhook-timestamp"),
        ("webhook-timestamp", "١٧٦٣٧١٢٠٠٠", "malformed webhook-timestamp"),
        # Digits a float cannot take from the clock, and more than int() reads by default.
        ("webhook-timestamp", "9" * 400, "malformed webhook-timestamp"),
        ("webhook-timestamp", "9" * 5000, "malformed webhook-timestamp"),
        ("webhook-signature", "garbage", "malformed webhook-signature"),
        ("webhook-signature", "v1,!!!", "malformed webhook-signature"),
        ("webhook-signature", "v2,AAAA", "malformed webhook-signature"),
    ],
)
def test_a_missing_or_malformed_header_fails(name: str, value: str | None, message: str) -> None:
    given = headers()
    if value is None:
        del given[name]
    else:
        given[name] = value
    with pytest.raises(InvalidSignature, match=message):
        verify_request(given, BODY, [SECRET], now=NOW)


def test_rotation_the_sender_signs_with_both_secrets_either_verifier_accepts() -> None:
    both = headers(OTHER, SECRET)
    assert both["webhook-signature"].count("v1,") == 2 and " " in both["webhook-signature"]
    assert verify_request(both, BODY, [SECRET], now=NOW)
    assert verify_request(both, BODY, [OTHER], now=NOW)
    # ...and a verifier holding old and new accepts a sender that has already switched.
    assert verify_request(headers(OTHER), BODY, [SECRET, OTHER], now=NOW)


def test_plain_and_whsec_forms_of_one_key_are_interchangeable() -> None:
    standard = "whsec_" + base64.b64encode(SECRET.encode()).decode()
    assert secret_key(standard) == secret_key(SECRET) == SECRET.encode()
    assert verify_request(headers(standard), BODY, [SECRET], now=NOW)
    assert verify_request(headers(SECRET), BODY, [standard], now=NOW)


def test_errors_never_contain_the_secret_or_the_signature() -> None:
    sent = headers(OTHER)
    with pytest.raises(InvalidSignature) as caught:
        verify_request(sent, BODY, [SECRET], now=NOW)
    text = str(caught.value)
    mac = sent["webhook-signature"].split(",")[1]
    assert SECRET not in text and OTHER not in text and mac not in text
    assert SECRET not in repr(Signer([SECRET]))


def test_verify_needs_a_secret() -> None:
    sent = headers()
    with pytest.raises(ValueError, match="at least one secret"):
        verify(sent["webhook-id"], str(NOW), sent["webhook-signature"], BODY, [""], now=NOW)
    with pytest.raises(ValueError, match="at least one secret"):
        Signer([])


def test_parse_secrets_splits_on_commas_and_refuses_short_or_malformed_ones() -> None:
    standard = "whsec_" + base64.b64encode(bytes(range(24))).decode()
    assert parse_secrets(f" {SECRET} , {standard} ") == (SECRET, standard)
    assert parse_secrets(None) == () and parse_secrets("  ") == ()
    with pytest.raises(ValueError, match="at least 16 characters") as caught:
        parse_secrets(f"{SECRET},short")
    assert "short" not in str(caught.value)
    with pytest.raises(ValueError, match="followed by base64"):
        parse_secrets("whsec_not*base64*at*all")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        parse_secrets("whsec_" + base64.b64encode(b"tiny").decode())


def test_consumers_can_import_it_without_the_relays_dependencies() -> None:
    code = (
        "import sys; import firestore_outbox.signing, firestore_outbox.consumer.events; "
        "heavy = ('requests', 'google.cloud.firestore', 'dotenv', 'cloudevents'); "
        "print([m for m in heavy if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
