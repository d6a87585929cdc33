"""Stored answers encrypted at rest: AES-256-GCM (or 128/192) with named keys for rotation.

`IDEMPOTENCY_ENCRYPTION_KEYS` lists `keyId:base64key` pairs, comma-separated; the first key
encrypts, every listed key decrypts, so a rotation adds the new key in front and drops the old
one after the TTL. Each answer gets a fresh 96-bit nonce, and its registry document id is the
associated data, so a ciphertext copied onto another key's record does not decrypt. Needs
the `cryptography` package (`pip install 'firestore-outbox[crypto]'`), imported only when keys
are configured.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from dataclasses import dataclass, field
from typing import Any

from firestore_outbox.errors import ConfigError, OutboxError

_KEY_ID = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")
NONCE_BYTES = 12


class AnswerUnreadable(OutboxError):
    """A stored answer cannot be decrypted: its key is not configured, or it is not ours."""


@dataclass(frozen=True)
class EncryptionKeys:
    """Named AES keys; the first encrypts."""

    keys: tuple[tuple[str, bytes], ...] = field(repr=False)

    @classmethod
    def parse(cls, text: str) -> EncryptionKeys:
        """Keys from `keyId:base64key,...`; the error names the variable, never a key."""
        keys: list[tuple[str, bytes]] = []
        for entry in (part.strip() for part in text.split(",")):
            key_id, colon, encoded = entry.partition(":")
            if not colon or not _KEY_ID.match(key_id):
                raise ConfigError(
                    "IDEMPOTENCY_ENCRYPTION_KEYS must be keyId:base64key pairs, comma-separated "
                    "(keyId: 1-32 letters, digits, '.', '_' or '-')"
                )
            try:
                key = base64.b64decode(encoded, validate=True)
            except (binascii.Error, ValueError):
                key = b""
            if len(key) not in (16, 24, 32):
                raise ConfigError(
                    f"IDEMPOTENCY_ENCRYPTION_KEYS: key {key_id} must be 16, 24 or 32 bytes "
                    "in base64"
                )
            if any(key_id == known for known, _ in keys):
                raise ConfigError(f"IDEMPOTENCY_ENCRYPTION_KEYS names key {key_id} twice")
            keys.append((key_id, key))
        try:
            import cryptography.hazmat.primitives.ciphers.aead  # noqa: F401
        except ImportError:
            raise ConfigError(
                "IDEMPOTENCY_ENCRYPTION_KEYS needs the cryptography package: "
                "pip install 'firestore-outbox[crypto]'"
            ) from None
        return cls(tuple(keys))

    def seal(self, plaintext: bytes, associated: str) -> dict[str, Any]:
        """`plaintext` encrypted with the first key, as the fields to store."""
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        key_id, key = self.keys[0]
        nonce = os.urandom(NONCE_BYTES)
        sealed = AESGCM(key).encrypt(nonce, plaintext, associated.encode())
        return {"keyId": key_id, "nonce": nonce, "ciphertext": sealed}

    def open(self, stored: dict[str, Any], associated: str) -> bytes:
        """The plaintext of `seal`'s fields; `AnswerUnreadable` when no key opens it."""
        from cryptography.exceptions import InvalidTag
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        key_id = stored.get("keyId")
        key = dict(self.keys).get(str(key_id))
        if key is None:
            raise AnswerUnreadable(f"the stored answer is encrypted with key {key_id!r}, not set")
        try:
            return AESGCM(key).decrypt(stored["nonce"], stored["ciphertext"], associated.encode())
        except (InvalidTag, KeyError, TypeError, ValueError):
            raise AnswerUnreadable(
                f"the stored answer does not decrypt with key {key_id}"
            ) from None
