"""Signed deliveries, version 2: Standard Webhooks over every CloudEvents attribute.

Standard library only, so a consumer can copy or import it alone. Each delivery carries

    webhook-id: ce_<base64url SHA-256 of the event's canonical attributes>
    webhook-timestamp: <Unix seconds when it was signed>
    webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<data>">

The signature is exactly the Standard Webhooks one (https://www.standardwebhooks.com), so any
of its libraries verifies it. That standard signs only the id, the timestamp and the body; the
CloudEvents attributes a consumer acts on (type, subject, time, ...) travel beside the body.
They are bound through `webhook-id`: it is a digest of them (`event_digest`), so the same
event always has the same id, and a delivery whose attributes were edited no longer matches
the signed id. A verifier checks the signature, then that digest against the attributes it
received (`firestore_outbox.consumer.events` does both for HTTP and for Function Compute events).

The canonical attributes are, in the order of `SIGNED_ATTRIBUTES` and then of
`OPTIONAL_SIGNED_ATTRIBUTES` (each only when the event has it, so an event without one has the
digest it always had), one line per attribute:
`<name>=<length of the value in UTF-8 bytes>:<value>\\n` (the length makes any value, newlines
included, unambiguous). Values are the decoded ones, not their percent-encoded wire forms.

Secrets: `whsec_<base64>` as the standard writes them, or any other string of at least 16
characters, whose UTF-8 bytes are then the key (its standard form is `whsec_` + their base64).
During a rotation the sender signs with each secret (space-separated `v1,...` entries) and the
verifier accepts any secret it holds.

The relay's `http` nudges are signed the same way, with a secret of their own
(`OUTBOX_NUDGE_SECRET`): the headers above over the nudge's CloudEvent JSON, whose attributes
all travel inside the signed body (`firestore_outbox.function_compute.nudge_trigger`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from firestore_outbox.errors import OutboxError

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
# The same three as CloudEvents extension attributes (lower-case letters and digits only), for
# structured-mode events: a Function Compute event function sees no HTTP headers.
ID_ATTRIBUTE = "webhookid"
TIMESTAMP_ATTRIBUTE = "webhooktimestamp"
SIGNATURE_ATTRIBUTE = "webhooksignature"
SIGNED_ATTRIBUTES = ("specversion", "id", "source", "type", "subject", "time", "datacontenttype")
# The re-drive marker (a CloudEvents extension attribute: `ce-outboxreplay` in binary mode),
# whose value is the re-drive job's id; signed when present, so a consumer that skips or
# accepts replays acts on what the relay sent (docs/redrive.md).
REPLAY_ATTRIBUTE = "outboxreplay"
OPTIONAL_SIGNED_ATTRIBUTES = (REPLAY_ATTRIBUTE,)
ID_PREFIX = "ce_"
SECRET_PREFIX = "whsec_"
VERSION = "v1"
DEFAULT_TOLERANCE_SECONDS = 300
MIN_SECRET_LENGTH = 16
_MAX_TIMESTAMP_DIGITS = 20


class InvalidSignature(OutboxError):
    """A delivery failed verification: missing, malformed, stale, altered or wrongly signed.
    The message says which, and never contains a secret or a signature."""


def secret_key(secret: str) -> bytes:
    """The HMAC key of one secret; `ValueError` names the problem, never the secret."""
    if secret.startswith(SECRET_PREFIX):
        try:
            key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
        except (binascii.Error, ValueError):
            raise ValueError(f"a {SECRET_PREFIX} secret must be followed by base64") from None
        if len(key) < MIN_SECRET_LENGTH:
            raise ValueError(f"a {SECRET_PREFIX} secret must hold at least 16 bytes")
        return key
    if len(secret) < MIN_SECRET_LENGTH:
        raise ValueError(
            f"each secret must be at least {MIN_SECRET_LENGTH} characters "
            f"(or {SECRET_PREFIX}<base64>)"
        )
    return secret.encode()


def parse_secrets(value: str | None) -> tuple[str, ...]:
    """Secrets from a comma-separated setting (several during a rotation), each checked."""
    secrets = tuple(part.strip() for part in (value or "").split(",") if part.strip())
    for secret in secrets:
        secret_key(secret)
    return secrets


def event_digest(attributes: Mapping[str, str]) -> str:
    """The `webhook-id` of an event: a digest of its `SIGNED_ATTRIBUTES` (all required) and
    of those `OPTIONAL_SIGNED_ATTRIBUTES` it has."""
    missing = [name for name in SIGNED_ATTRIBUTES if not isinstance(attributes.get(name), str)]
    if missing:
        raise InvalidSignature(f"the signed attribute {missing[0]} is missing")
    names = [*SIGNED_ATTRIBUTES, *(n for n in OPTIONAL_SIGNED_ATTRIBUTES if n in attributes)]
    canonical = "".join(
        f"{name}={len(value.encode('utf-8', 'surrogatepass'))}:{value}\n"
        for name, value in ((name, str(attributes[name])) for name in names)
    )
    # surrogatepass: signing never raises; such a value cannot arrive in a header anyway.
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).digest()
    return ID_PREFIX + base64.urlsafe_b64encode(digest).decode().rstrip("=")


@dataclass(frozen=True)
class Signature:
    """One delivery's signature, as HTTP headers or as structured-mode attributes."""

    webhook_id: str
    timestamp: int
    signatures: str  # "v1,<base64> v1,<base64>": one per secret

    def headers(self) -> dict[str, str]:
        return {
            ID_HEADER: self.webhook_id,
            TIMESTAMP_HEADER: str(self.timestamp),
            SIGNATURE_HEADER: self.signatures,
        }

    def attributes(self) -> dict[str, str]:
        return {
            ID_ATTRIBUTE: self.webhook_id,
            TIMESTAMP_ATTRIBUTE: str(self.timestamp),
            SIGNATURE_ATTRIBUTE: self.signatures,
        }


class Signer:
    """Signs deliveries with every one of `secrets` (the newest first, by convention)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._keys = [secret_key(secret) for secret in secrets if secret]
        if not self._keys:
            raise ValueError("a signer needs at least one secret")

    def __repr__(self) -> str:
        return f"Signer({len(self._keys)} secret(s))"

    def sign(
        self, attributes: Mapping[str, str], data: bytes, *, timestamp: int | None = None
    ) -> Signature:
        """Sign one delivery: its CloudEvents attributes and the exact data bytes sent."""
        webhook_id = event_digest(attributes)
        t = int(time.time()) if timestamp is None else timestamp
        content = _signed_content(webhook_id, t, data)
        macs = (hmac.new(key, content, hashlib.sha256).digest() for key in self._keys)
        signatures = " ".join(f"{VERSION},{base64.b64encode(mac).decode()}" for mac in macs)
        return Signature(webhook_id, t, signatures)


def verify(
    webhook_id: str | None,
    timestamp: str | None,
    signature: str | None,
    data: bytes,
    secrets: Iterable[str],
    *,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> int:
    """The Standard Webhooks check: return the timestamp or raise `InvalidSignature`.

    `data` must be the bytes exactly as received. The timestamp must lie within `tolerance`
    seconds of `now` either way. Every candidate is compared in constant time. This checks
    the id as signed, not that it matches the event's attributes: see `check_digest`.
    """
    keys = [secret_key(secret) for secret in secrets if secret]
    if not keys:
        raise ValueError("verification needs at least one secret")
    given = {ID_HEADER: webhook_id, TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: signature}
    missing = [name for name, value in given.items() if not value or not isinstance(value, str)]
    if missing:
        raise InvalidSignature(f"missing {', '.join(missing)}")
    assert webhook_id and timestamp and signature  # for mypy: checked just above
    # Unix seconds: ten digits until the year 2286; a longer one is no time (and a float
    # cannot hold the difference from one of hundreds of digits).
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > _MAX_TIMESTAMP_DIGITS:
        raise InvalidSignature(f"malformed {TIMESTAMP_HEADER}: needs Unix seconds")
    t = int(timestamp)
    now = time.time() if now is None else now
    if abs(now - t) > tolerance:
        raise InvalidSignature(
            f"timestamp outside the tolerance of {tolerance:g} s "
            f"({now - t:+.0f} s from the receiver's clock)"
        )
    candidates = _candidates(signature)
    content = _signed_content(webhook_id, t, data)
    expected = [hmac.new(key, content, hashlib.sha256).digest() for key in keys]
    matched = False
    for candidate in candidates:
        for mac in expected:
            # No early exit: the time taken does not depend on which pair matched.
            matched |= hmac.compare_digest(candidate, mac)
    if not matched:
        raise InvalidSignature("no signature matches the body and a known secret")
    return t


def signature_headers(headers: Mapping[str, str]) -> tuple[str | None, str | None, str | None]:
    """The `webhook-id`, `webhook-timestamp` and `webhook-signature` of HTTP `headers`, looked
    up whatever their case (Function Compute hands them over as `Webhook-Id`, ...), each None
    when absent: what `verify` takes."""
    lowered = {str(name).lower(): value for name, value in headers.items()}
    found = (lowered.get(name) for name in (ID_HEADER, TIMESTAMP_HEADER, SIGNATURE_HEADER))
    webhook_id, timestamp, signature = (v if isinstance(v, str) else None for v in found)
    return webhook_id, timestamp, signature


def check_digest(webhook_id: str, attributes: Mapping[str, str]) -> None:
    """Raise `InvalidSignature` unless `webhook_id` is the digest of `attributes`."""
    if not hmac.compare_digest(webhook_id.encode(), event_digest(attributes).encode()):
        raise InvalidSignature(f"the event's attributes do not match its {ID_HEADER}")


def _signed_content(webhook_id: str, timestamp: int, data: bytes) -> bytes:
    # surrogatepass: an id no signer wrote (a lone surrogate) fails to match, not to encode.
    return f"{webhook_id}.{timestamp}.".encode("utf-8", "surrogatepass") + data


def _candidates(signature: str) -> list[bytes]:
    candidates = []
    for entry in signature.split():
        version, _, value = entry.partition(",")
        if version != VERSION:
            continue  # other versions (asymmetric v1a) are not ours to check
        try:
            candidates.append(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError):
            continue
    if not candidates:
        raise InvalidSignature(f"malformed {SIGNATURE_HEADER}: needs {VERSION},<base64>")
    return candidates
