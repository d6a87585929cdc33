"""`RelayConfig`: how the relay delivers, retries and paces itself, validated in one place.

This module holds the relay's own settings; partitioning's
(`firestore_outbox.relay.partitioned.settings`),
fan-out's (`firestore_outbox.relay.fan_out_settings`) and each publisher family's fields, variables
and checks are in a settings module of their own, which `RelayConfig` inherits
(`firestore_outbox.publishers.settings` says how), so every setting is still one flat attribute and
keyword."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from firestore_outbox.config.numbers import check_seconds, parse_seconds, parse_whole
from firestore_outbox.config.settings import env_reader
from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.limits import MAX_WRITES_PER_BATCH
from firestore_outbox.publishers.amqp.settings import AmqpSettings, read_amqp
from firestore_outbox.publishers.fc.settings import FcSettings, read_fc
from firestore_outbox.publishers.http.settings import HttpSettings, read_http
from firestore_outbox.publishers.message_settings import (
    EventBridgeSettings,
    MnsSettings,
    RocketMqSettings,
    read_message_services,
)
from firestore_outbox.publishers.settings import (
    NumberTable,
    at_least,
    read_access_key,
    read_numbers,
)
from firestore_outbox.relay.fan_out_settings import FanOutSettings, read_fan_out
from firestore_outbox.relay.partitioned.settings import PartitionSettings, read_partitioning
from firestore_outbox.signing import parse_secrets

# Time kept for the settle write after a publish; a Firestore write normally takes ~10 ms.
SETTLE_ALLOWANCE_SECONDS = 0.5
DEFAULT_RETENTION_SECONDS = 7 * 24 * 3600.0


@dataclass(frozen=True, kw_only=True)
class RelayConfig(
    PartitionSettings,
    FanOutSettings,
    HttpSettings,
    FcSettings,
    MnsSettings,
    EventBridgeSettings,
    RocketMqSettings,
    AmqpSettings,
):
    """Relay settings; build with `load_relay_config()` or directly in tests.

    Every field has an environment variable (`RELAY_` + its name in capitals, seconds where
    the name says so), except `downstream_url` (`DOWNSTREAM_SERVICE_URL`), `retention_seconds`
    (`OUTBOX_RETENTION_SECONDS`, also the default of `outbox purge`) and the Alibaba Cloud
    credentials (`ALIBABA_CLOUD_ACCESS_KEY_ID`, `..._SECRET`, `..._SECURITY_TOKEN`,
    which Function Compute sets for a function that has a role). `signing_secrets` come from
    `RELAY_SIGNING_SECRET`, comma-separated; each delivery is signed with every one of them.
    `recheck_released` is on when `OUTBOX_NUDGE` is not `off` (`firestore_outbox.nudge`).
    The partitioning, fan-out and publishers' fields come from their settings classes (the
    bases).
    """

    publisher: str = "http"  # or one of PUBLISHERS
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
    event_source: str | None = None
    # Nudges on: a partition released drained is read once more (`relay.partitioned.drain`).
    recheck_released: bool = False
    signing_secrets: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        self._check_partitioning()
        self._check_fan_out()
        check = _PUBLISHER_CHECKS.get(self.publisher)
        if check is None:
            raise ConfigError(
                f"RELAY_PUBLISHER must be one of {', '.join(PUBLISHERS)}, got {self.publisher!r}"
            )
        check(self)
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
        for name, (variable, parse) in _NUMBERS.items():
            if parse is parse_seconds:  # set in code too, not only read by load_relay_config
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

    @property
    def attempt_seconds(self) -> float:
        """The longest one attempt may take: connect and read timeout, then the settle."""
        return self.connect_timeout_seconds + self.http_timeout_seconds + SETTLE_ALLOWANCE_SECONDS

    @property
    def connect_timeout_seconds(self) -> float:
        return min(5.0, self.http_timeout_seconds)


# The publishers RELAY_PUBLISHER may name, each with its check from its settings class;
# `firestore_outbox/publishers/registry.py` builds each.
_PUBLISHER_CHECKS: dict[str, Callable[[RelayConfig], None]] = {
    "http": RelayConfig._check_http,
    "fc": RelayConfig._check_fc,
    "fc3": RelayConfig._check_fc3,
    "amqp": RelayConfig._check_amqp,
    "mns": RelayConfig._check_mns,
    "eventbridge": RelayConfig._check_eventbridge,
    "rocketmq": RelayConfig._check_rocketmq,
}
PUBLISHERS = tuple(_PUBLISHER_CHECKS)


_NUMBERS: NumberTable = {
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
}


def load_relay_config(environ: Mapping[str, str] | None = None) -> RelayConfig:
    """Read the relay's variables like `load_settings()` does; `ConfigError` names the bad one."""
    get = env_reader(environ)
    numbers = read_numbers(get, _NUMBERS)
    return RelayConfig(
        publisher=(get("RELAY_PUBLISHER") or "http").lower(),
        event_source=get("RELAY_EVENT_SOURCE"),
        recheck_released=(get("OUTBOX_NUDGE") or "off").lower() != "off",
        **read_http(get),
        **read_fc(get),
        **read_message_services(get),
        **read_amqp(get),
        **read_access_key(get),
        signing_secrets=_signing_secrets(get("RELAY_SIGNING_SECRET")),
        **read_partitioning(get),
        **read_fan_out(get),
        **numbers,
    )


def read_seconds(variable: str, default: float, environ: Mapping[str, str] | None = None) -> float:
    """One relay variable of seconds on its own, for the commands that need no downstream."""
    raw = env_reader(environ)(variable)
    if raw is None:
        return default
    value = parse_seconds(variable, raw)
    if value < 0:
        raise ConfigError(f"{variable} must be at least 0, got {raw!r}")
    return value


def _signing_secrets(value: str | None) -> tuple[str, ...]:
    try:
        return parse_secrets(value)
    except ValueError as exc:
        raise ConfigError(f"RELAY_SIGNING_SECRET: {exc}") from None
