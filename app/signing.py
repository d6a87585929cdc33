"""Signed deliveries: the relay signs, consumers verify. Standard library only.

With `RELAY_SIGNING_SECRET` set, every delivery carries

    Outbox-Signature: t=1763712000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff...

where `v1` is the hex HMAC-SHA256, under the shared secret, of the signed content

    b"<t>\\n<ce-id>\\n<ce-source>\\n" + <the exact body bytes>

`t` is the sender's Unix time in seconds, as in Stripe's webhooks, so a captured delivery
cannot be replayed after the tolerance window. Unlike Stripe's and GitHub's scheme the event's
id and source are signed too: in CloudEvents binary mode they travel as headers, and they are
the key consumers deduplicate on, so a replay with an edited `ce-id` would otherwise pass as a
new event. During a secret rotation the sender signs with each of its secrets (one `v1` each)
and the verifier accepts any secret it holds.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterable, Mapping

from app.errors import OutboxError

SIGNATURE_HEADER = "Outbox-Signature"
# The same value as a CloudEvents extension attribute, for structured-mode events
# (a Function Compute event function sees no HTTP headers).
SIGNATURE_ATTRIBUTE = "outboxsignature"
SCHEME = "v1"
DEFAULT_TOLERANCE_SECONDS = 300
MIN_SECRET_LENGTH = 16
# Envelope attributes are strings, whose quotes JSON escapes, so the first match is `data`.
_DATA_MEMBER = b',"data":'


class InvalidSignature(OutboxError):
    """A delivery failed verification: missing, malformed, stale, altered or wrongly signed.
    The message says which, and never contains a secret or a signature."""


def signed_content(timestamp: int, event_id: str, source: str, body: bytes) -> bytes:
    """The bytes the signature covers."""
    return f"{timestamp}\n{event_id}\n{source}\n".encode() + body


def parse_secrets(value: str | None) -> tuple[str, ...]:
    """Secrets from a comma-separated setting (several during a rotation); `ValueError` names
    the problem, never the secret."""
    secrets = tuple(part.strip() for part in (value or "").split(",") if part.strip())
    for secret in secrets:
        if len(secret) < MIN_SECRET_LENGTH:
            raise ValueError(f"each secret must be at least {MIN_SECRET_LENGTH} characters")
    return secrets


class Signer:
    """Signs deliveries with every one of `secrets` (the newest first, by convention)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._keys = [secret.encode() for secret in secrets if secret]
        if not self._keys:
            raise ValueError("a signer needs at least one secret")

    def __repr__(self) -> str:
        return f"Signer({len(self._keys)} secret(s))"

    def sign(self, event_id: str, source: str, body: bytes, *, timestamp: int | None = None) -> str:
        """The `Outbox-Signature` value for one delivery."""
        t = int(time.time()) if timestamp is None else timestamp
        content = signed_content(t, event_id, source, body)
        digests = (hmac.new(key, content, hashlib.sha256).hexdigest() for key in self._keys)
        return ",".join([f"t={t}", *(f"{SCHEME}={digest}" for digest in digests)])


def verify(
    signature: str | None,
    *,
    event_id: str,
    source: str,
    body: bytes,
    secrets: Iterable[str],
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> int:
    """Check one delivery's signature; return its timestamp or raise `InvalidSignature`.

    `body` must be the bytes exactly as received, before any parsing. The timestamp must lie
    within `tolerance` seconds of `now` either way (clock skew between sender and receiver
    counts against it). Every candidate signature is compared in constant time.
    """
    keys = [secret.encode() for secret in secrets if secret]
    if not keys:
        raise ValueError("verification needs at least one secret")
    if not signature or not isinstance(signature, str):
        raise InvalidSignature(f"missing {SIGNATURE_HEADER}")
    timestamp, candidates = _parse(signature)
    now = time.time() if now is None else now
    if abs(now - timestamp) > tolerance:
        raise InvalidSignature(
            f"timestamp outside the tolerance of {tolerance:g} s "
            f"({now - timestamp:+.0f} s from the receiver's clock)"
        )
    content = signed_content(timestamp, event_id, source, body)
    expected = [hmac.new(key, content, hashlib.sha256).hexdigest().encode() for key in keys]
    matched = False
    for candidate in candidates:
        for digest in expected:
            # No early exit: the time taken does not depend on which pair matched.
            matched |= hmac.compare_digest(candidate, digest)
    if not matched:
        raise InvalidSignature("no signature matches the body and a known secret")
    return timestamp


def verify_headers(
    headers: Mapping[str, str],
    body: bytes,
    secrets: Iterable[str],
    *,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> int:
    """`verify` for a binary-mode CloudEvent: id, source and signature from the headers
    (names in any case)."""
    lowered = {name.lower(): value for name, value in headers.items()}
    return verify(
        lowered.get(SIGNATURE_HEADER.lower()),
        event_id=lowered.get("ce-id", ""),
        source=lowered.get("ce-source", ""),
        body=body,
        secrets=secrets,
        tolerance=tolerance,
        now=now,
    )


def verify_structured(
    event: bytes,
    secrets: Iterable[str],
    *,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> int:
    """`verify` for a structured-mode CloudEvent as the Function Compute publisher sends it:
    the signature is its `outboxsignature` attribute and covers the exact bytes of `data`,
    which come last in the document."""
    try:
        envelope = json.loads(event)
        start = event.index(_DATA_MEMBER) + len(_DATA_MEMBER)
    except ValueError:
        raise InvalidSignature("not a structured CloudEvent with data") from None
    data = event[start:].rstrip()
    if not isinstance(envelope, dict) or not data.endswith(b"}"):
        raise InvalidSignature("not a structured CloudEvent with data")
    return verify(
        envelope.get(SIGNATURE_ATTRIBUTE),
        event_id=str(envelope.get("id", "")),
        source=str(envelope.get("source", "")),
        body=data[:-1],
        secrets=secrets,
        tolerance=tolerance,
        now=now,
    )


def _parse(signature: str) -> tuple[int, list[bytes]]:
    timestamp: int | None = None
    candidates = []
    for part in signature.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and value.isdigit():
            timestamp = int(value)
        elif name == SCHEME and value:
            candidates.append(value.encode())
    if timestamp is None or not candidates:
        raise InvalidSignature(f"malformed {SIGNATURE_HEADER}: needs t=<unix time> and {SCHEME}=")
    return timestamp, candidates
