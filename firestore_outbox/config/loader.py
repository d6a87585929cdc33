"""`Configuration`: the one loader. Reads the environment and `./.env` once per invocation
and builds every settings object from that one snapshot.

    config = Configuration.load()       # os.environ over ./.env, read here and only here
    config.settings                     # Settings: Firestore, collections, logging
    config.relay()                      # RelayConfig: needs DOWNSTREAM_SERVICE_URL (or fc)
    config.receiver(verify_signatures=True), config.seconds(VARIABLE, default), config.secrets()

The `outbox` command makes one per run and the Function Compute handler one per invocation;
before, `load_settings`, `load_relay_config`, the lock timeout, the retention and the log
masking each read `.env` again (five reads for one `outbox relay`), and a `.env` edited in
between could give one command two configurations.

Why frozen dataclasses and not pydantic-settings: the dataclasses (`Settings`, `RelayConfig`,
`ReceiverConfig`) already validate every field in `__post_init__` with messages that name the
variable and never echo a secret, and tests, the bench and application code build them
directly. pydantic-settings would add pydantic (and its compiled core) to the Function
Compute package, whose cold start and size we keep small, and re-express those checks in its
own vocabulary for no new behaviour. The parts worth having from it are here: one snapshot,
read once, environment over `.env`, every object built from the same values.

Each object is built on first use, not at `load()`: `outbox status` needs no downstream URL,
so a relay setting it never reads must not fail it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from firestore_outbox.config.settings import (
    Settings,
    environment_in_use,
    load_settings,
    read_environment,
)
from firestore_outbox.observability.logs import (
    SECRET_LIST_VARIABLES,
    SECRET_VARIABLES,
    configured_secrets,
)
from firestore_outbox.observability.masking import masker
from firestore_outbox.observability.otlp_settings import OTLP_ENDPOINTS, otlp_signals
from firestore_outbox.relay.config import RelayConfig, load_relay_config, read_seconds

if TYPE_CHECKING:
    from firestore_outbox.consumer.receiver_settings import ReceiverConfig
    from firestore_outbox.idempotency.config import IdempotencyConfig

__all__ = ["Configuration"]


@dataclass(frozen=True)
class Configuration:
    """One snapshot of the variables and what is built from it; see the module docstring."""

    environ: Mapping[str, str]

    # Every variable whose value is a secret or carries one: the OTLP headers hold an SLS
    # AccessKey secret or an ARMS token, ARMS' OTLP endpoints a token in their path, the AMQP
    # broker URL its password.
    SECRET_VARIABLES: ClassVar[tuple[str, ...]] = (
        *SECRET_VARIABLES,
        *SECRET_LIST_VARIABLES,
        "OTEL_EXPORTER_OTLP_HEADERS",
        *OTLP_ENDPOINTS,
        "RELAY_AMQP_URL",
    )

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> Configuration:
        """Snapshot `environ`, or `os.environ` over `./.env` when None (read once, here)."""
        if environ is None:
            return cls(read_environment())
        return cls(MappingProxyType(dict(environ)))

    @contextmanager
    def in_use(self) -> Iterator[Configuration]:
        """Within the block, code that reads the environment on its own (`load_settings()`,
        `configured_secrets()`, ...) reads this snapshot instead of `.env` again."""
        with environment_in_use(self.environ):
            yield self

    @functools.cached_property
    def settings(self) -> Settings:
        """The library's `Settings` (built once; `ConfigError` names a bad variable)."""
        return load_settings(self.environ)

    def relay(self) -> RelayConfig:
        """The relay's `RelayConfig`, from the same snapshot."""
        return load_relay_config(self.environ)

    def receiver(self, *, verify_signatures: bool = True) -> ReceiverConfig:
        """The reference receiver's `ReceiverConfig`, from the same snapshot."""
        # Imported when asked for: the reference receiver is no part of the relay function.
        from firestore_outbox.consumer.receiver_settings import load_receiver_config

        return load_receiver_config(self.environ, verify_signatures=verify_signatures)

    def idempotency(self) -> IdempotencyConfig:
        """The front door's `IdempotencyConfig` (`IDEMPOTENCY_*`), from the same snapshot."""
        # Imported when asked for: the front door is no part of the relay function.
        from firestore_outbox.idempotency.config import load_idempotency_config

        return load_idempotency_config(self.environ)

    def seconds(self, variable: str, default: float) -> float:
        """One relay variable of seconds on its own (`RELAY_LOCK_TIMEOUT_SECONDS`, ...)."""
        return read_seconds(variable, default, self.environ)

    def secrets(self) -> list[str]:
        """Every configured secret, for masking logs and error lines."""
        return configured_secrets(self.environ)

    def mask(self, text: str) -> str:
        """`text` with every spelling of every configured secret hidden."""
        return masker(self.secrets())(text)

    def otlp_signals(self) -> tuple[str, ...]:
        """The signals (`TRACES`, `METRICS`) these variables ask to export over OTLP."""
        return otlp_signals(self.environ)
