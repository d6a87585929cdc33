"""Signatures: what the relay sends passes; anything stale, altered, missing or wrongly
signed fails, and so does a replay that edits the event's identity."""

from __future__ import annotations

import subprocess
import sys

import pytest

from app.signing import (
    SIGNATURE_HEADER,
    InvalidSignature,
    Signer,
    parse_secrets,
    verify,
    verify_headers,
)

SECRET, OTHER = "whsec-0123456789abcdef", "whsec-fedcba9876543210"
NOW = 1_763_712_000
BODY = b'{"orderId":"o-1","customerId":"c-1"}'


def headers(signature: str, **changes: str) -> dict[str, str]:
    return {"ce-id": "e-1", "ce-source": "/shop", SIGNATURE_HEADER: signature, **changes}


def signed(secret: str = SECRET, *, at: int = NOW, body: bytes = BODY) -> str:
    return Signer([secret]).sign("e-1", "/shop", body, timestamp=at)


def test_a_valid_signature_passes_and_returns_its_timestamp() -> None:
    assert verify_headers(headers(signed()), BODY, [SECRET], now=NOW) == NOW


def test_the_value_is_timestamp_and_hex_hmac_sha256() -> None:
    import hashlib
    import hmac

    content = f"{NOW}\ne-1\n/shop\n".encode() + BODY
    digest = hmac.new(SECRET.encode(), content, hashlib.sha256).hexdigest()
    assert signed() == f"t={NOW},v1={digest}"


def test_header_names_are_matched_in_any_case() -> None:
    lowered = {name.lower(): value for name, value in headers(signed()).items()}
    assert verify_headers(lowered, BODY, [SECRET], now=NOW) == NOW


@pytest.mark.parametrize(
    "body",
    [BODY + b" ", BODY.replace(b"c-1", b"c-2"), b"", BODY[:-1]],
    ids=["trailing-space", "changed-value", "empty", "truncated"],
)
def test_an_altered_body_fails(body: bytes) -> None:
    with pytest.raises(InvalidSignature, match="no signature matches"):
        verify_headers(headers(signed()), body, [SECRET], now=NOW)


def test_a_wrong_secret_fails() -> None:
    with pytest.raises(InvalidSignature, match="no signature matches"):
        verify_headers(headers(signed(OTHER)), BODY, [SECRET], now=NOW)


@pytest.mark.parametrize("change", [{"ce-id": "e-2"}, {"ce-source": "/elsewhere"}])
def test_a_replay_with_another_event_identity_fails(change: dict[str, str]) -> None:
    # The inbox deduplicates on (ce-source, ce-id): both are signed.
    with pytest.raises(InvalidSignature, match="no signature matches"):
        verify_headers(headers(signed(), **change), BODY, [SECRET], now=NOW)


def test_a_stale_timestamp_fails_even_with_a_valid_mac() -> None:
    with pytest.raises(InvalidSignature, match="outside the tolerance of 300 s"):
        verify_headers(headers(signed(at=NOW - 301)), BODY, [SECRET], now=NOW)


def test_an_edited_timestamp_fails() -> None:
    forged = signed(at=NOW - 1000).replace(f"t={NOW - 1000}", f"t={NOW}")
    with pytest.raises(InvalidSignature, match="no signature matches"):
        verify_headers(headers(forged), BODY, [SECRET], now=NOW)


def test_clock_skew_within_the_tolerance_passes_beyond_it_fails() -> None:
    assert verify_headers(headers(signed(at=NOW + 200)), BODY, [SECRET], now=NOW) == NOW + 200
    assert verify_headers(headers(signed(at=NOW - 200)), BODY, [SECRET], now=NOW) == NOW - 200
    with pytest.raises(InvalidSignature, match=r"\(-400 s from the receiver's clock\)"):
        verify_headers(headers(signed(at=NOW + 400)), BODY, [SECRET], now=NOW)
    assert verify_headers(headers(signed(at=NOW + 400)), BODY, [SECRET], now=NOW, tolerance=500)


@pytest.mark.parametrize(
    "value",
    [None, "", "v1=abc", f"t={NOW}", "t=soon,v1=abc", "garbage"],
    ids=["absent", "empty", "no-timestamp", "no-v1", "bad-timestamp", "garbage"],
)
def test_a_missing_or_malformed_header_fails(value: str | None) -> None:
    given = headers("x")
    if value is None:
        del given[SIGNATURE_HEADER]
    else:
        given[SIGNATURE_HEADER] = value
    with pytest.raises(InvalidSignature, match=r"missing|malformed"):
        verify_headers(given, BODY, [SECRET], now=NOW)


def test_rotation_the_sender_signs_with_both_secrets_either_verifier_accepts() -> None:
    both = Signer([OTHER, SECRET]).sign("e-1", "/shop", BODY, timestamp=NOW)
    assert both.count("v1=") == 2
    assert verify_headers(headers(both), BODY, [SECRET], now=NOW) == NOW
    assert verify_headers(headers(both), BODY, [OTHER], now=NOW) == NOW
    # ...and a verifier holding old and new accepts a sender that has already switched.
    assert verify_headers(headers(signed(OTHER)), BODY, [SECRET, OTHER], now=NOW) == NOW


def test_errors_never_contain_the_secret_or_the_signature() -> None:
    signature = signed(OTHER)
    with pytest.raises(InvalidSignature) as caught:
        verify_headers(headers(signature), BODY, [SECRET], now=NOW)
    text = str(caught.value)
    assert SECRET not in text and OTHER not in text and signature.split("v1=")[1] not in text
    assert SECRET not in repr(Signer([SECRET]))


def test_verify_needs_a_secret() -> None:
    with pytest.raises(ValueError, match="at least one secret"):
        verify(signed(), event_id="e-1", source="/shop", body=BODY, secrets=[""], now=NOW)
    with pytest.raises(ValueError, match="at least one secret"):
        Signer([])


def test_parse_secrets_splits_on_commas_and_refuses_short_ones() -> None:
    assert parse_secrets(f" {SECRET} , {OTHER} ") == (SECRET, OTHER)
    assert parse_secrets(None) == () and parse_secrets("  ") == ()
    with pytest.raises(ValueError, match="at least 16 characters") as caught:
        parse_secrets(f"{SECRET},short")
    assert "short" not in str(caught.value)


def test_consumers_can_import_it_without_the_relays_dependencies() -> None:
    code = (
        "import sys; import app.signing; "
        "heavy = ('requests', 'google.cloud.firestore', 'dotenv'); "
        "print([m for m in heavy if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
