"""`RelayConfig`: how the relay delivers, retries and paces itself, validated in one place.

The relay's own settings are fields here; each component's are a small settings class of its
own, which `RelayConfig` holds rather than inherits: `config.publisher` (one publisher's
settings: `HttpSettings`, `AmqpSettings`, ... from `firestore_outbox.publishers`),
`config.partitions` (`PartitionSettings`), `config.fan_out` (`FanOutSettings`) and
`config.ramp` (`RampSettings`). Each checks itself when it is made; `RelayConfig.from_environment`
builds them all from one lookup, which `firestore_outbox.config.Configuration` hands it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from firestore_outbox import edge
from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.limits import MAX_WRITES_PER_BATCH
from firestore_outbox.firestore.outbox_collections import OutboxCollections
from firestore_outbox.numbers import (
    Get,
    NumberTable,
    at_least,
    check_seconds,
    parse_seconds,
    parse_whole,
    read_numbers,
)
from firestore_outbox.publishers.base import PublisherOptions
from firestore_outbox.publishers.registry import PUBLISHERS, REGISTRY
from firestore_outbox.publishers.settings import PublisherSettings
from firestore_outbox.relay.fan_out import FanOutSettings
from firestore_outbox.relay.partition_settings import PartitionSettings
from firestore_outbox.relay.ramp import RampSettings
from firestore_outbox.signing import Signer, parse_secrets

# Time kept for the settle write after a publish; a Firestore write normally takes ~10 ms.
SETTLE_ALLOWANCE_SECONDS = 0.5
DEFAULT_RETENTION_SECONDS = 7 * 24 * 3600.0


@dataclass(frozen=True, kw_only=True)
class RelayConfig:
    """Relay settings; `Configuration.load().relay()` reads them, or build them directly:
    `RelayConfig(publisher=HttpSettings(url=...), partitions=PartitionSettings(count=64))`.

    Every field has an environment variable (`RELAY_` + its name in capitals, seconds where
    the name says so), except `retention_seconds` (`OUTBOX_RETENTION_SECONDS`, also the
    default of `outbox purge`). `signing_secrets` come from `RELAY_SIGNING_SECRET`,
    comma-separated; each delivery is signed with every one of them. `publisher` is the one
    publisher's settings `RELAY_PUBLISHER` names (`firestore_outbox.publishers.registry`).
    `recheck_released` is on when `OUTBOX_NUDGE` is not `off` (`firestore_outbox.nudge`).
    """

    publisher: PublisherSettings
    partitions: PartitionSettings = field(default_factory=PartitionSettings)
    fan_out: FanOutSettings = field(default_factory=FanOutSettings)
    ramp: RampSettings = field(default_factory=RampSettings)
    max_attempts: int = 5
    lock_timeout_seconds: float = 300.0
    backoff_base_seconds: float = 10.0
    backoff_max_seconds: float = 900.0
    batch_size: int = 250
    concurrency: int = 16
    time_budget_seconds: float = 50.0
    follow_poll_seconds: float = 10.0
    http_timeout_seconds: float = 10.0
    firestore_timeout_seconds: float = 10.0
    # How long a PROCESSED event is kept: the relay stamps `expireAt` for a TTL policy.
    retention_seconds: float = DEFAULT_RETENTION_SECONDS
    # CHANNEL results in a row (the channel, not the event, is broken) that stop a run.
    breaker_threshold: int = 3
    # The heartbeat (`firestore_outbox.relay.heartbeat`): at most one write per this long per
    # relay, unless what it reports changed; and the collection it goes to (None:
    # `{OUTBOX_COLLECTION}_health`, `firestore_outbox.firestore.outbox_collections`).
    heartbeat_seconds: float = 15.0
    health_collection: str | None = None
    event_source: str | None = None
    # Nudges on: a partition released drained is read once more (`relay.run.page_loop`).
    recheck_released: bool = False
    signing_secrets: tuple[str, ...] = field(default=(), repr=False)
    # Every other secret the process is configured with (`Configuration.secrets()`): a
    # downstream may echo anything back in an error body, masked there as in the logs.
    known_secrets: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.publisher, PublisherSettings):
            raise ConfigError(
                "RelayConfig.publisher must be a publisher's settings (HttpSettings, "
                f"AmqpSettings, ...), got {type(self.publisher).__name__}"
            )
        at_least("RELAY_MAX_ATTEMPTS", self.max_attempts, 1)
        at_least("RELAY_BATCH_SIZE", self.batch_size, 1)
        if self.batch_size > MAX_WRITES_PER_BATCH:
            raise ConfigError(f"RELAY_BATCH_SIZE must be at most {MAX_WRITES_PER_BATCH}")
        at_least("RELAY_CONCURRENCY", self.concurrency, 1)
        at_least("RELAY_BREAKER_THRESHOLD", self.breaker_threshold, 1)
        for variable, seconds in (
            ("RELAY_BACKOFF_BASE_SECONDS", self.backoff_base_seconds),
            ("RELAY_TIME_BUDGET_SECONDS", self.time_budget_seconds),
            ("RELAY_FOLLOW_POLL_SECONDS", self.follow_poll_seconds),
            ("RELAY_HTTP_TIMEOUT_SECONDS", self.http_timeout_seconds),
            ("RELAY_FIRESTORE_TIMEOUT_SECONDS", self.firestore_timeout_seconds),
        ):
            if not seconds > 0:
                raise ConfigError(f"{variable} must be greater than 0, got {seconds}")
        for name, (variable, parse) in NUMBERS.items():
            if parse is parse_seconds:  # set in code too, not only read from the environment
                check_seconds(variable, getattr(self, name))
        if self.backoff_max_seconds < self.backoff_base_seconds:
            raise ConfigError(
                "RELAY_BACKOFF_MAX_SECONDS must be at least RELAY_BACKOFF_BASE_SECONDS"
            )
        # A lease must outlive the attempt it protects, or a second relay could take the
        # event back while the first one is still sending it.
        if not self.lock_timeout_seconds >= 2 * self.attempt_seconds:
            raise ConfigError(
                "RELAY_LOCK_TIMEOUT_SECONDS must be at least twice the longest attempt "
                f"({self.attempt_seconds:g} s: connect and read timeout plus "
                f"{SETTLE_ALLOWANCE_SECONDS:g} s to settle), got {self.lock_timeout_seconds:g}"
            )
        # A run stops leasing once less than one attempt is left: a shorter budget never
        # publishes anything, run after run.
        if not self.time_budget_seconds >= self.attempt_seconds:
            raise ConfigError(
                f"RELAY_TIME_BUDGET_SECONDS ({self.time_budget_seconds:g}) must fit one attempt: "
                f"at least {self.attempt_seconds:g} s (RELAY_HTTP_TIMEOUT_SECONDS "
                f"{self.http_timeout_seconds:g} s, its connect timeout "
                f"{self.connect_timeout_seconds:g} s and {SETTLE_ALLOWANCE_SECONDS:g} s to settle)"
            )
        if not self.retention_seconds >= 0:
            raise ConfigError(
                f"OUTBOX_RETENTION_SECONDS must be at least 0, got {self.retention_seconds}"
            )
        if self.event_source is not None and not self.event_source.strip():
            raise ConfigError("RELAY_EVENT_SOURCE must not be blank")
        try:
            parse_secrets(",".join(self.signing_secrets))
        except ValueError as exc:
            raise ConfigError(f"RELAY_SIGNING_SECRET: {exc}") from None

    @classmethod
    def from_environment(cls, get: Get, known_secrets: tuple[str, ...] = ()) -> RelayConfig:
        """The relay's variables `get` looks up (`Configuration.relay()` calls this);
        `ConfigError` names the bad one."""
        name = (get("RELAY_PUBLISHER") or "http").lower()
        entry = REGISTRY.get(name)
        if entry is None:
            names = ", ".join(PUBLISHERS)
            raise ConfigError(f"RELAY_PUBLISHER must be one of {names}, got {name!r}")
        return cls(
            partitions=PartitionSettings.from_environment(get),
            fan_out=FanOutSettings.from_environment(get),
            ramp=RampSettings.from_environment(get),
            publisher=entry.settings.from_environment(get),
            event_source=get("RELAY_EVENT_SOURCE"),
            health_collection=get("OUTBOX_HEALTH_COLLECTION"),
            recheck_released=(get("OUTBOX_NUDGE") or "off").lower() != "off",
            signing_secrets=_signing_secrets(get("RELAY_SIGNING_SECRET")),
            known_secrets=tuple(known_secrets),
            **read_numbers(get, NUMBERS),
        )

    @property
    def attempt_seconds(self) -> float:
        """The longest one attempt may take: connect and read timeout, then the settle."""
        return self.connect_timeout_seconds + self.http_timeout_seconds + SETTLE_ALLOWANCE_SECONDS

    @property
    def connect_timeout_seconds(self) -> float:
        return min(5.0, self.http_timeout_seconds)

    def collections(self, outbox: str) -> OutboxCollections:
        """The collections this relay writes for the outbox `outbox`: the partition leases and
        the heartbeats set here, or derived from `outbox`."""
        return OutboxCollections.of(
            outbox, partitions=self.partitions.collection, health=self.health_collection
        )

    def source_for(self, project: str, database: str, collection: str) -> str:
        """The CloudEvents `source` of every delivery from `collection`: `RELAY_EVENT_SOURCE`,
        or the collection's Firestore resource name."""
        return self.event_source or (
            f"//firestore.googleapis.com/projects/{project}/databases/{database}"
            f"/documents/{collection}"
        )

    def publisher_options(self) -> PublisherOptions:
        """What the publisher is built with: its timeouts, pool, signer and secrets to mask."""
        signer = Signer(self.signing_secrets) if self.signing_secrets else None
        return {
            "connect_timeout": self.connect_timeout_seconds,
            "read_timeout": self.http_timeout_seconds,
            "pool_size": self.concurrency,
            "signer": signer,
            # A downstream may echo anything back in an error body, and errors become
            # `lastError`: every secret this process knows is masked there, as in the logs.
            "secrets": [*self.known_secrets, *self.signing_secrets],
        }


# The relay's own numbers: field -> its variable and parser (the docs test checks their defaults).
NUMBERS: NumberTable = {
    "max_attempts": ("RELAY_MAX_ATTEMPTS", parse_whole),
    "lock_timeout_seconds": ("RELAY_LOCK_TIMEOUT_SECONDS", parse_seconds),
    "backoff_base_seconds": ("RELAY_BACKOFF_BASE_SECONDS", parse_seconds),
    "backoff_max_seconds": ("RELAY_BACKOFF_MAX_SECONDS", parse_seconds),
    "batch_size": ("RELAY_BATCH_SIZE", parse_whole),
    "concurrency": ("RELAY_CONCURRENCY", parse_whole),
    "time_budget_seconds": ("RELAY_TIME_BUDGET_SECONDS", parse_seconds),
    "follow_poll_seconds": ("RELAY_FOLLOW_POLL_SECONDS", parse_seconds),
    "http_timeout_seconds": ("RELAY_HTTP_TIMEOUT_SECONDS", parse_seconds),
    "firestore_timeout_seconds": ("RELAY_FIRESTORE_TIMEOUT_SECONDS", parse_seconds),
    "retention_seconds": ("OUTBOX_RETENTION_SECONDS", parse_seconds),
    "breaker_threshold": ("RELAY_BREAKER_THRESHOLD", parse_whole),
    "heartbeat_seconds": ("RELAY_HEARTBEAT_SECONDS", parse_seconds),
}


def _signing_secrets(value: str | None) -> tuple[str, ...]:
    try:
        return parse_secrets(value)
    except ValueError as exc:
        raise ConfigError(f"RELAY_SIGNING_SECRET: {exc}") from None


def load_relay_config(environ: Mapping[str, str] | None = None) -> RelayConfig:
    """Read the relay's variables from `environ`, or from `os.environ` over `./.env` (read
    now, by the composition root's loader); `ConfigError` names the bad one."""
    config: RelayConfig = edge.load(environ).relay()
    return config
