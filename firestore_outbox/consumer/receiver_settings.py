"""The reference receiver's settings (`outbox receiver`, `app.order_counter`): which secrets
verify deliveries, how old a signature may be, and where the inbox and the counts live."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from firestore_outbox import edge
from firestore_outbox.consumer.inbox import DEFAULT_INBOX_COLLECTION
from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.limits import check_collection_id
from firestore_outbox.numbers import Get
from firestore_outbox.signing import DEFAULT_TOLERANCE_SECONDS, parse_secrets

DEFAULT_CONSUMER = "order-counter"
DEFAULT_COUNTS_COLLECTION = "order_counts"


@dataclass(frozen=True, kw_only=True)
class ReceiverConfig:
    """The reference receiver's settings; `Configuration.load().receiver()` reads them."""

    signing_secrets: tuple[str, ...] = field(default=(), repr=False)
    verify_signatures: bool = True
    tolerance_seconds: float = DEFAULT_TOLERANCE_SECONDS
    consumer: str = DEFAULT_CONSUMER
    inbox_collection: str = DEFAULT_INBOX_COLLECTION
    counts_collection: str = DEFAULT_COUNTS_COLLECTION
    firestore_timeout_seconds: float = 10.0

    def __post_init__(self) -> None:
        if self.verify_signatures and not self.signing_secrets:
            raise ConfigError(
                "RECEIVER_SIGNING_SECRET is not set: the receiver cannot verify deliveries "
                "(set it to the relay's RELAY_SIGNING_SECRET, or run with --no-verify)"
            )
        if not (math.isfinite(self.tolerance_seconds) and self.tolerance_seconds > 0):
            raise ConfigError("RECEIVER_SIGNATURE_TOLERANCE_SECONDS must be a number > 0")
        for variable, value in (
            ("INBOX_COLLECTION", self.inbox_collection),
            ("RECEIVER_COUNTS_COLLECTION", self.counts_collection),
        ):
            problem = check_collection_id(value)
            if problem:
                raise ConfigError(f"{variable} {problem}")

    @classmethod
    def from_environment(cls, get: Get, *, verify_signatures: bool = True) -> ReceiverConfig:
        """The receiver's variables `get` looks up (`Configuration.receiver()` calls this);
        `ConfigError` names a bad one, never a secret."""
        try:
            secrets = parse_secrets(get("RECEIVER_SIGNING_SECRET"))
        except ValueError as exc:
            raise ConfigError(f"RECEIVER_SIGNING_SECRET: {exc}") from None
        tolerance = get("RECEIVER_SIGNATURE_TOLERANCE_SECONDS")
        try:
            seconds = float(tolerance) if tolerance else DEFAULT_TOLERANCE_SECONDS
        except ValueError:
            raise ConfigError("RECEIVER_SIGNATURE_TOLERANCE_SECONDS must be a number > 0") from None
        return cls(
            signing_secrets=secrets,
            verify_signatures=verify_signatures,
            tolerance_seconds=seconds,
            consumer=get("RECEIVER_CONSUMER") or DEFAULT_CONSUMER,
            inbox_collection=get("INBOX_COLLECTION") or DEFAULT_INBOX_COLLECTION,
            counts_collection=get("RECEIVER_COUNTS_COLLECTION") or DEFAULT_COUNTS_COLLECTION,
        )


def load_receiver_config(
    environ: Mapping[str, str] | None = None, *, verify_signatures: bool = True
) -> ReceiverConfig:
    """Read the reference receiver's variables from `environ`, or from `os.environ` over
    `./.env` (read now); `ConfigError` names a bad one, never a secret."""
    config: ReceiverConfig = edge.load(environ).receiver(verify_signatures=verify_signatures)
    return config
