"""Configuration of the idempotent front door, from the environment (or `.env`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from firestore_outbox import edge
from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.limits import check_collection_id
from firestore_outbox.idempotency.crypto import EncryptionKeys
from firestore_outbox.numbers import Get, parse_seconds, parse_whole

DEFAULT_COLLECTION = "idempotency_keys"
DEFAULT_TENANT_HEADER = "X-Tenant-Id"
DEFAULT_TTL_SECONDS = 24 * 3600.0
DEFAULT_LOCK_TIMEOUT_SECONDS = 60.0
DEFAULT_MAX_RESPONSE_BYTES = 256 * 1024
DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024
# A response body this large still fits a Firestore document (1 MiB) with room to spare.
LARGEST_STORABLE_RESPONSE = 512 * 1024
_HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")


@dataclass(frozen=True, kw_only=True)
class IdempotencyConfig:
    """Settings of the Idempotency-Key middleware; defaults as documented in
    docs/reference/configuration.md."""

    collection: str = DEFAULT_COLLECTION
    tenant_header: str = DEFAULT_TENANT_HEADER
    ttl_seconds: float = DEFAULT_TTL_SECONDS
    # After this long on Firestore's clock a lock whose request never finished is taken over.
    lock_timeout_seconds: float = DEFAULT_LOCK_TIMEOUT_SECONDS
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    encryption: EncryptionKeys | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if problem := check_collection_id(self.collection):
            raise ConfigError(f"IDEMPOTENCY_COLLECTION {problem}")
        if not _HEADER_NAME.match(self.tenant_header):
            raise ConfigError(
                f"IDEMPOTENCY_TENANT_HEADER must be an HTTP header name, got {self.tenant_header!r}"
            )
        for variable, value in (
            ("IDEMPOTENCY_TTL_SECONDS", self.ttl_seconds),
            ("IDEMPOTENCY_LOCK_TIMEOUT_SECONDS", self.lock_timeout_seconds),
        ):
            if isinstance(value, bool) or not 0 < value < float("inf"):
                raise ConfigError(f"{variable} must be a number of seconds more than 0")
        if self.lock_timeout_seconds >= self.ttl_seconds:
            raise ConfigError(
                "IDEMPOTENCY_LOCK_TIMEOUT_SECONDS must be less than IDEMPOTENCY_TTL_SECONDS"
            )
        if not 0 <= self.max_response_bytes <= LARGEST_STORABLE_RESPONSE:
            raise ConfigError(
                "IDEMPOTENCY_MAX_RESPONSE_BYTES must be 0 to "
                f"{LARGEST_STORABLE_RESPONSE} (a Firestore document holds at most 1 MiB)"
            )
        if self.max_request_bytes <= 0:
            raise ConfigError("IDEMPOTENCY_MAX_REQUEST_BYTES must be more than 0")

    @classmethod
    def from_environment(cls, get: Get) -> IdempotencyConfig:
        """The `IDEMPOTENCY_*` variables `get` looks up (`Configuration.idempotency()` calls
        this); a malformed one raises `ConfigError` naming it."""
        keys = get("IDEMPOTENCY_ENCRYPTION_KEYS")
        return cls(
            collection=get("IDEMPOTENCY_COLLECTION") or DEFAULT_COLLECTION,
            tenant_header=get("IDEMPOTENCY_TENANT_HEADER") or DEFAULT_TENANT_HEADER,
            ttl_seconds=_seconds(
                "IDEMPOTENCY_TTL_SECONDS", get("IDEMPOTENCY_TTL_SECONDS"), DEFAULT_TTL_SECONDS
            ),
            lock_timeout_seconds=_seconds(
                "IDEMPOTENCY_LOCK_TIMEOUT_SECONDS",
                get("IDEMPOTENCY_LOCK_TIMEOUT_SECONDS"),
                DEFAULT_LOCK_TIMEOUT_SECONDS,
            ),
            max_response_bytes=_bytes(
                "IDEMPOTENCY_MAX_RESPONSE_BYTES",
                get("IDEMPOTENCY_MAX_RESPONSE_BYTES"),
                DEFAULT_MAX_RESPONSE_BYTES,
            ),
            max_request_bytes=_bytes(
                "IDEMPOTENCY_MAX_REQUEST_BYTES",
                get("IDEMPOTENCY_MAX_REQUEST_BYTES"),
                DEFAULT_MAX_REQUEST_BYTES,
            ),
            encryption=EncryptionKeys.parse(keys) if keys else None,
        )

    @property
    def tenant_environ_key(self) -> str:
        """The WSGI environ key of the tenant header."""
        return "HTTP_" + self.tenant_header.upper().replace("-", "_")


def _seconds(variable: str, text: str | None, default: float) -> float:
    return default if text is None else parse_seconds(variable, text)


def _bytes(variable: str, text: str | None, default: int) -> int:
    return default if text is None else parse_whole(variable, text, what="a whole number of bytes")


def load_idempotency_config(environ: Mapping[str, str] | None = None) -> IdempotencyConfig:
    """Read the `IDEMPOTENCY_*` variables from `environ`, or from `os.environ` over `./.env`
    (read now); a malformed one raises `ConfigError` naming it."""
    config: IdempotencyConfig = edge.load(environ).idempotency()
    return config
