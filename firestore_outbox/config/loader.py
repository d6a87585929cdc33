"""`Configuration`: the one loader. Reads the environment and `./.env` once per invocation
and builds every settings object from that one snapshot.

    config = Configuration.load()       # os.environ over ./.env, read here and only here
    config.settings                     # Settings: Firestore, collections, logging
    config.collections                  # OutboxCollections: the outbox's own collections
    config.relay()                      # RelayConfig: needs DOWNSTREAM_SERVICE_URL (or fc)
    config.partitions(), config.nudge(), config.idempotency(), config.receiver(), config.secrets()

The `outbox` command makes one per run and the Function Compute handler one per invocation,
so one command never sees two configurations of a `.env` edited in between.

Why frozen dataclasses and not pydantic-settings: the dataclasses (`Settings`, `RelayConfig`,
`ReceiverConfig`) already validate every field in `__post_init__` with messages that name the
variable and never echo a secret, and tests, the bench and application code build them
directly. pydantic-settings would add pydantic (and its compiled core) to the Function
Compute package, whose cold start and size we keep small, and re-express those checks in its
own vocabulary for no new behaviour. The parts worth having from it are here: one snapshot,
read once, environment over `.env`, every object built from the same values.

Each object is built on first use, not at `load()`: `outbox status` needs no downstream URL,
so a relay setting it never reads must not fail it.

It is the one reader of the environment, and the composition root: on top of the library's
layers, it imports the settings class of every folder (and `firestore_outbox.config.wiring`
builds the objects from them), and nothing below imports it. Every component receives its
settings as arguments; only the public conveniences that take no settings call
`Configuration.default()` (the process's, read once), through `firestore_outbox.edge`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from firestore_outbox.config.environment import env_reader, read_environment
from firestore_outbox.config.secrets import (
    SECRET_LIST_VARIABLES,
    SECRET_VARIABLES,
    configured_secrets,
)
from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.outbox_collections import OutboxCollections
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.masking import masker
from firestore_outbox.numbers import Get, parse_seconds
from firestore_outbox.observability.otlp_settings import OTLP_ENDPOINTS, otlp_signals

if TYPE_CHECKING:
    from firestore_outbox.consumer.receiver_settings import ReceiverConfig
    from firestore_outbox.health.settings import WatchdogSettings
    from firestore_outbox.idempotency.config import IdempotencyConfig
    from firestore_outbox.nudge.settings import NudgeSettings
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.partition_settings import PartitionSettings

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
        "WATCHDOG_WEBHOOK_URL",  # a robot's access token is in its query or path
    )

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None) -> Configuration:
        """Snapshot `environ`, or `os.environ` over `./.env` when None (read once, here)."""
        if environ is None:
            return cls(read_environment())
        return cls(MappingProxyType(dict(environ)))

    @staticmethod
    @functools.cache
    def default() -> Configuration:
        """The process's own configuration, read on first use and kept: what the public
        conveniences given no settings use (`get_db_client()`, `FirestoreUnitOfWork(db)`,
        `nudger_for(db, settings)`). Entry points load their own instead."""
        return Configuration.load()

    @property
    def get(self) -> Get:
        """The lookup over this snapshot (stripped; None when unset or blank)."""
        return env_reader(self.environ)

    @functools.cached_property
    def settings(self) -> Settings:
        """The library's `Settings` (built once; `ConfigError` names a bad variable)."""
        return Settings.from_environment(self.get)

    @functools.cached_property
    def collections(self) -> OutboxCollections:
        """Every collection of this outbox: `OUTBOX_COLLECTION`, and the partition leases,
        lease-mode records, heartbeats and re-drive jobs named after it unless
        `RELAY_PARTITION_COLLECTION` / `OUTBOX_HEALTH_COLLECTION` name them (what the relay,
        the watchdog, the console and the commands of this configuration all use)."""
        # Only these variables: `outbox status` must not fail on a watchdog's or relay's other
        # settings it never uses.
        return OutboxCollections.of(
            self.settings.outbox_collection,
            partitions=self.get("RELAY_PARTITION_COLLECTION"),
            health=self.get("OUTBOX_HEALTH_COLLECTION"),
        )

    def relay(self) -> RelayConfig:
        """The relay's `RelayConfig`, its publisher's, partitions', fan-out's and ramp's
        settings among it, from the same snapshot."""
        from firestore_outbox.relay.config import RelayConfig

        return RelayConfig.from_environment(self.get, tuple(self.secrets()))

    def partitions(self) -> PartitionSettings:
        """The partitions (`RELAY_PARTITIONS`, ...): the writers and the commands need them
        without the rest of the relay's settings."""
        from firestore_outbox.relay.partition_settings import PartitionSettings

        return PartitionSettings.from_environment(self.get)

    def nudge(self) -> NudgeSettings:
        """The nudge's settings (`OUTBOX_NUDGE`), with what its target is built from: built
        once per configuration, since a writer asks for them at every commit."""
        return self._nudge

    @functools.cached_property
    def _nudge(self) -> NudgeSettings:
        from firestore_outbox.nudge.settings import NudgeMode, NudgeSettings
        from firestore_outbox.relay.fan_out import FanOutSettings

        nudge = NudgeSettings.from_environment(self.get)
        count = self.partitions().count  # sent with each nudge: a relay of another refuses it
        if nudge.mode is NudgeMode.FC3:
            fan_out = FanOutSettings.from_environment(self.get)
            return NudgeSettings(
                mode=nudge.mode, url=nudge.url, fan_out=fan_out, partition_count=count
            )
        if nudge.mode is NudgeMode.PROCESS:
            from firestore_outbox.config.wiring import ProcessDrain

            relay = self.relay()
            return NudgeSettings(
                mode=nudge.mode, url=nudge.url, relay=relay, drain=ProcessDrain(relay)
            )
        return NudgeSettings(
            mode=nudge.mode, url=nudge.url, secrets=nudge.secrets, partition_count=count
        )

    def nudge_secrets(self) -> tuple[str, ...]:
        """`OUTBOX_NUDGE_SECRET`: what the relay behind an HTTP trigger verifies nudges with,
        whatever its own `OUTBOX_NUDGE`; `ConfigError` names a malformed one."""
        from firestore_outbox.nudge.settings import nudge_secrets

        return nudge_secrets(self.get)

    def watchdog(self) -> WatchdogSettings:
        """The watchdog's `WatchdogSettings` (`WATCHDOG_*`, `OUTBOX_HEALTH_COLLECTION`)."""
        from firestore_outbox.health.settings import WatchdogSettings

        return WatchdogSettings.from_environment(self.get)

    def idempotency(self) -> IdempotencyConfig:
        """The front door's `IdempotencyConfig` (`IDEMPOTENCY_*`)."""
        from firestore_outbox.idempotency.config import IdempotencyConfig

        return IdempotencyConfig.from_environment(self.get)

    def receiver(self, *, verify_signatures: bool = True) -> ReceiverConfig:
        """The reference receiver's `ReceiverConfig`, from the same snapshot."""
        # Imported when asked for: the reference receiver is no part of the relay function.
        from firestore_outbox.consumer.receiver_settings import ReceiverConfig

        return ReceiverConfig.from_environment(self.get, verify_signatures=verify_signatures)

    def seconds(self, variable: str, default: float) -> float:
        """One variable of seconds on its own (`RELAY_LOCK_TIMEOUT_SECONDS`, ...), for the
        commands that need no downstream; `ConfigError` below 0."""
        raw = self.get(variable)
        if raw is None:
            return default
        value = parse_seconds(variable, raw)
        if value < 0:
            raise ConfigError(f"{variable} must be at least 0, got {raw!r}")
        return value

    def secrets(self) -> list[str]:
        """Every configured secret, for masking logs and error lines."""
        return configured_secrets(self.environ)

    def mask(self, text: str) -> str:
        """`text` with every spelling of every configured secret hidden."""
        return masker(self.secrets())(text)

    def otlp_signals(self) -> tuple[str, ...]:
        """The signals (`TRACES`, `METRICS`) these variables ask to export over OTLP."""
        return otlp_signals(self.environ)
