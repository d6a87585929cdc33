"""`RelayConfig`: how the relay delivers, retries and paces itself, validated in one place.

This module holds the relay's own settings; each publisher family's fields, variables and
checks are in its settings module, which `RelayConfig` inherits (`app.relay.publisher_settings`
says how), so every setting is still one flat attribute and keyword."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from app.config import env_reader
from app.config_numbers import parse_seconds, parse_whole
from app.errors import ConfigError
from app.firestore_limits import MAX_WRITES_PER_BATCH
from app.relay.amqp_settings import AmqpSettings, read_amqp
from app.relay.fc_settings import FcSettings, read_fc
from app.relay.http_settings import HttpSettings, read_http
from app.relay.message_settings import (
    EventBridgeSettings,
    MnsSettings,
    RocketMqSettings,
    read_message_services,
)
from app.relay.partitions import DEFAULT_PARTITIONS, check_partitions
from app.relay.publisher_settings import read_access_key
from app.relay.ramp import parse_ramp
from app.signing import parse_secrets

# Time kept for the settle write after a publish; a Firestore write normally takes ~10 ms.
SETTLE_ALLOWANCE_SECONDS = 0.5
DEFAULT_RETENTION_SECONDS = 7 * 24 * 3600.0


@dataclass(frozen=True, kw_only=True)
class RelayConfig(
    HttpSettings, FcSettings, MnsSettings, EventBridgeSettings, RocketMqSettings, AmqpSettings
):
    """Relay settings; build with `load_relay_config()` or directly in tests.

    Every field has an environment variable (`RELAY_` + its name in capitals, seconds where
    the name says so), except `downstream_url` (`DOWNSTREAM_SERVICE_URL`), `retention_seconds`
    (`OUTBOX_RETENTION_SECONDS`, also the default of `outbox purge`) and the Alibaba Cloud
    credentials (`ALIBABA_CLOUD_ACCESS_KEY_ID`, `..._SECRET`, `..._SECURITY_TOKEN`,
    which Function Compute sets for a function that has a role). `signing_secrets` come from
    `RELAY_SIGNING_SECRET`, comma-separated; each delivery is signed with every one of them.
    The publishers' fields come from their settings classes (the bases).
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
    signing_secrets: tuple[str, ...] = field(default=(), repr=False)
    # "partition": invocations lease partitions and settle each event with one write;
    # "event": the per-event leases of 0.2 (two writes per event, no order), kept to compare.
    leases: str = "partition"
    partitions: int = DEFAULT_PARTITIONS
    ordering: str = "aggregate"  # or "none"
    failed_head: str = "hold"  # or "skip": what a FAILED event does to its aggregate's later ones
    partition_collection: str = "outbox_partitions"
    partitions_per_claim: int = 4
    # Fan-out on Function Compute (`app.relay.fan_out`): 0 turns it off.
    fan_out_max: int = 0
    fan_out_events: int = 2000  # events one invocation is expected to drain in its budget
    fan_out_endpoint: str | None = None
    fan_out_service: str | None = None
    fan_out_function: str | None = None
    # The ramp governor (`app.relay.ramp`): Firestore's 500/50/5 rule, off by default.
    ramp: bool = False
    ramp_rate: int = 500  # operations per second at first
    ramp_step_seconds: float = 300.0  # 50% more after each step

    def __post_init__(self) -> None:
        self._check_partitioning()
        self._check_fan_out()
        check = _PUBLISHER_CHECKS.get(self.publisher)
        if check is None:
            raise ConfigError(
                f"RELAY_PUBLISHER must be one of {', '.join(PUBLISHERS)}, got {self.publisher!r}"
            )
        check(self)
        _at_least("RELAY_MAX_ATTEMPTS", self.max_attempts, 1)
        _at_least("RELAY_BATCH_SIZE", self.batch_size, 1)
        if self.batch_size > MAX_WRITES_PER_BATCH:
            raise ConfigError(f"RELAY_BATCH_SIZE must be at most {MAX_WRITES_PER_BATCH}")
        _at_least("RELAY_CONCURRENCY", self.concurrency, 1)
        _at_least("RELAY_BREAKER_THRESHOLD", self.breaker_threshold, 1)
        for variable, seconds in (
            ("RELAY_BACKOFF_BASE_SECONDS", self.backoff_base_seconds),
            ("RELAY_TIME_BUDGET_SECONDS", self.time_budget_seconds),
            ("RELAY_FOLLOW_POLL_SECONDS", self.follow_poll_seconds),
            ("RELAY_HTTP_TIMEOUT_SECONDS", self.http_timeout_seconds),
            ("RELAY_FIRESTORE_TIMEOUT_SECONDS", self.firestore_timeout_seconds),
        ):
            if not seconds > 0:
                raise ConfigError(f"{variable} must be greater than 0, got {seconds}")
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

    def _check_partitioning(self) -> None:
        for variable, value, allowed in (
            ("RELAY_LEASES", self.leases, ("partition", "event")),
            ("RELAY_ORDERING", self.ordering, ("aggregate", "none")),
            ("RELAY_FAILED_HEAD", self.failed_head, ("hold", "skip")),
        ):
            if value not in allowed:
                raise ConfigError(f"{variable} must be {' or '.join(allowed)}, got {value!r}")
        check_partitions(self.partitions)
        _at_least("RELAY_PARTITIONS_PER_CLAIM", self.partitions_per_claim, 1)
        if not self.partition_collection.strip() or "/" in self.partition_collection:
            raise ConfigError("RELAY_PARTITION_COLLECTION must be a collection name")

    def _check_fan_out(self) -> None:
        _at_least("RELAY_FAN_OUT_MAX", self.fan_out_max, 0)
        _at_least("RELAY_FAN_OUT_EVENTS", self.fan_out_events, 1)
        _at_least("RELAY_RAMP_RATE", self.ramp_rate, 1)
        if not self.ramp_step_seconds > 0:
            raise ConfigError(
                f"RELAY_RAMP_STEP_SECONDS must be greater than 0, got {self.ramp_step_seconds}"
            )
        if self.fan_out_max:
            self._check_function(
                "RELAY_FAN_OUT",
                (self.fan_out_endpoint, self.fan_out_service, self.fan_out_function),
                "RELAY_FAN_OUT_MAX",
            )

    @property
    def attempt_seconds(self) -> float:
        """The longest one attempt may take: connect and read timeout, then the settle."""
        return self.connect_timeout_seconds + self.http_timeout_seconds + SETTLE_ALLOWANCE_SECONDS

    @property
    def connect_timeout_seconds(self) -> float:
        return min(5.0, self.http_timeout_seconds)


# The publishers RELAY_PUBLISHER may name, each with its check from its settings class;
# `app/relay/factory.py` builds each.
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


_NUMBERS: dict[str, tuple[str, Callable[[str, str], float]]] = {
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
    "partitions": ("RELAY_PARTITIONS", parse_whole),
    "partitions_per_claim": ("RELAY_PARTITIONS_PER_CLAIM", parse_whole),
    "fan_out_max": ("RELAY_FAN_OUT_MAX", parse_whole),
    "fan_out_events": ("RELAY_FAN_OUT_EVENTS", parse_whole),
    "ramp_rate": ("RELAY_RAMP_RATE", parse_whole),
    "ramp_step_seconds": ("RELAY_RAMP_STEP_SECONDS", parse_seconds),
}


def load_relay_config(environ: Mapping[str, str] | None = None) -> RelayConfig:
    """Read the relay's variables like `load_settings()` does; `ConfigError` names the bad one."""
    get = env_reader(environ)
    numbers: dict[str, Any] = {}
    for name, (variable, parse) in _NUMBERS.items():
        raw = get(variable)
        if raw is not None:
            numbers[name] = parse(variable, raw)
    return RelayConfig(
        publisher=(get("RELAY_PUBLISHER") or "http").lower(),
        event_source=get("RELAY_EVENT_SOURCE"),
        **read_http(get),
        **read_fc(get),
        **read_message_services(get),
        **read_amqp(get),
        **read_access_key(get),
        signing_secrets=_signing_secrets(get("RELAY_SIGNING_SECRET")),
        leases=(get("RELAY_LEASES") or "partition").lower(),
        ordering=(get("RELAY_ORDERING") or "aggregate").lower(),
        failed_head=(get("RELAY_FAILED_HEAD") or "hold").lower(),
        partition_collection=get("RELAY_PARTITION_COLLECTION") or "outbox_partitions",
        fan_out_endpoint=get("RELAY_FAN_OUT_ENDPOINT"),
        fan_out_service=get("RELAY_FAN_OUT_SERVICE"),
        fan_out_function=get("RELAY_FAN_OUT_FUNCTION"),
        ramp=parse_ramp(get("RELAY_RAMP")),
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


def _at_least(variable: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{variable} must be a whole number >= {minimum}, got {value!r}")
