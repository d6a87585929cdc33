"""The `Idempotency-Key` header and the tenant it is scoped to.

The IETF draft "The Idempotency-Key HTTP Header Field" makes the header an RFC 8941 Item
whose value is a String: `Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`. A string
is quoted, holds printable ASCII only, and escapes only `"` and `\\`. Most client libraries
send the key bare (`Idempotency-Key: 8e03978e-...`, Stripe-style); a bare HTTP token (RFC 9110
`tchar`s, plus the `:` and `/` an RFC 8941 token may hold) is the same key as its quoted form,
so `abc` and `"abc"` are one key. Anything else is malformed. Keys are unique per
tenant, not globally, so the registry's document id hashes both: two tenants choosing the same
key never meet, and neither learns the other used it.
"""

from __future__ import annotations

import hashlib
import json
import re

from firestore_outbox.errors import InvalidInput

MAX_KEY_LENGTH = 255
MAX_TENANT_LENGTH = 255
# RFC 9110 tchar, plus ":" and "/" (RFC 8941 sf-token): what a bare key may hold.
_BARE_KEY = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~:/-]+")


class InvalidKey(InvalidInput):
    """The `Idempotency-Key` header is neither an RFC 8941 string nor a bare token of 1 to 255
    characters."""


class InvalidTenant(InvalidInput):
    """The tenant header is not printable ASCII of at most 255 characters."""


def parse_key(header: str) -> str:
    """The key an `Idempotency-Key` header carries; `InvalidKey` says what is wrong."""
    text = header.strip(" \t")
    if text[:1] != '"':
        return _bare_key(text)
    if len(text) < 2:
        raise InvalidKey("Idempotency-Key has no closing quote (RFC 8941)")
    key: list[str] = []
    index = 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 1
            if index >= len(text) or text[index] not in '"\\':
                raise InvalidKey('Idempotency-Key may escape only " and \\ (RFC 8941)')
            key.append(text[index])
        elif char == '"':
            break
        elif not " " <= char <= "~":
            raise InvalidKey("Idempotency-Key must hold printable ASCII only (RFC 8941)")
        else:
            key.append(char)
        index += 1
    else:
        raise InvalidKey("Idempotency-Key has no closing quote (RFC 8941)")
    if text[index + 1 :].strip(" \t"):
        raise InvalidKey("Idempotency-Key must be one string, with nothing after it")
    if not key:
        raise InvalidKey("Idempotency-Key must not be empty")
    if len(key) > MAX_KEY_LENGTH:
        raise InvalidKey(f"Idempotency-Key must be at most {MAX_KEY_LENGTH} characters")
    return "".join(key)


def _bare_key(text: str) -> str:
    if not text:
        raise InvalidKey("Idempotency-Key must not be empty")
    if not _BARE_KEY.fullmatch(text):
        raise InvalidKey(
            'Idempotency-Key must be a quoted string, e.g. "3f2a-..." (RFC 8941), or a bare'
            " token of letters, digits and !#$%&'*+-.^_`|~:/"
        )
    if len(text) > MAX_KEY_LENGTH:
        raise InvalidKey(f"Idempotency-Key must be at most {MAX_KEY_LENGTH} characters")
    return text


def parse_tenant(value: str | None) -> str:
    """The tenant a request belongs to; "" when it names none."""
    tenant = (value or "").strip(" \t")
    if len(tenant) > MAX_TENANT_LENGTH or not all(" " <= c <= "~" for c in tenant):
        raise InvalidTenant(
            f"the tenant must be printable ASCII of at most {MAX_TENANT_LENGTH} characters"
        )
    return tenant


def record_id(tenant: str, key: str) -> str:
    """The registry document id of `key` within `tenant` (JSON keeps the two apart)."""
    return hashlib.sha256(json.dumps([tenant, key]).encode()).hexdigest()
