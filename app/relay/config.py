"""`RelayConfig`: how the relay delivers, retries and paces itself, validated in one place."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.config import env_reader
from app.errors import ConfigError
from app.firestore_limits import MAX_WRITES_PER_BATCH
from app.relay.amqp_fc3_checks import check_amqp, check_fc3
from app.relay.partitions import DEFAULT_PARTITIONS, check_partitions
from app.relay.ramp import parse_ramp
from app.relay.target_checks import check_eventbridge, check_mns, check_rocketmq, flag
from app.signing import parse_secrets
from app.urls import url_problem

# The publishers RELAY_PUBLISHER may name; app/relay/factory.py builds each.
PUBLISHERS = ("http", "fc", "fc3", "amqp", "mns", "eventbridge", "rocketmq")

# Time kept for the settle write after a publish; a Firestore write normally takes ~10 ms.
SETTLE_ALLOWANCE_SECONDS = 0.5
DEFAULT_RETENTION_SECONDS = 7 * 24 * 3600.0


@dataclass(frozen=True, kw_only=True)
class RelayConfig:
    """Relay settings; build with `load_relay_config()` or directly in tests.

    Every field has an environment variable (`RELAY_` + its name in capitals, seconds where
    the name says so), except `downstream_url` (`DOWNSTREAM_SERVICE_URL`), `retention_seconds`
    (`OUTBOX_RETENTION_SECONDS`, also the default of `outbox purge`) and the Alibaba Cloud
    credentials (`ALIBABA_CLOUD_ACCESS_KEY_ID`, `..._SECRET`, `..._SECURITY_TOKEN`,
    which Function Compute sets for a function that has a role). `signing_secrets` come from
    `RELAY_SIGNING_SECRET`, comma-separated; each delivery is signed with every one of them.
    """

    publisher: str = "http"  # or one of PUBLISHERS
    downstream_url: str | None = None
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
    fc_endpoint: str | None = None
    fc_service: str | None = None
    fc_function: str | None = None
    fc_qualifier: str | None = None
    fc_invocation_type: str = "async"
    # RELAY_PUBLISHER=mns: the endpoint and a queue or a topic (app/relay/mns.py).
    mns_endpoint: str | None = None
    mns_queue: str | None = None
    mns_topic: str | None = None
    # RELAY_PUBLISHER=eventbridge: the endpoint and the event bus (app/relay/eventbridge.py).
    eventbridge_endpoint: str | None = None
    eventbridge_bus: str | None = None
    # RELAY_PUBLISHER=rocketmq: the proxy, the topic and its kind (app/relay/rocketmq.py).
    rocketmq_endpoints: str | None = None
    rocketmq_topic: str | None = None
    rocketmq_fifo: bool = False
    rocketmq_tls: bool = False
    rocketmq_namespace: str | None = None
    rocketmq_access_key: str | None = None
    rocketmq_secret_key: str | None = field(default=None, repr=False)
    # RELAY_PUBLISHER=amqp: the broker URL (with its password), exchange and routing key
    # (None: each event's type); app/relay/amqp.py.
    amqp_url: str | None = field(default=None, repr=False)
    amqp_exchange: str = ""
    amqp_routing_key: str | None = None
    access_key_id: str | None = None
    access_key_secret: str | None = field(default=None, repr=False)
    security_token: str | None = field(default=None, repr=False)
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
        if self.publisher == "http":
            if self.downstream_url is None:
                raise ConfigError(
                    "DOWNSTREAM_SERVICE_URL is not set: the relay has nowhere to deliver"
                )
            # The URL may embed a token, so it is not echoed.
            _check_url("DOWNSTREAM_SERVICE_URL", self.downstream_url)
        elif self.publisher == "fc":
            self._check_fc()
        elif self.publisher == "mns":
            check_mns(self)
        elif self.publisher == "eventbridge":
            check_eventbridge(self)
        elif self.publisher == "rocketmq":
            check_rocketmq(self)
        elif self.publisher == "fc3":
            check_fc3(self)
        elif self.publisher == "amqp":
            check_amqp(self)
        else:
            raise ConfigError(
                f"RELAY_PUBLISHER must be one of {', '.join(PUBLISHERS)}, got {self.publisher!r}"
            )
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

    def _check_function(
        self, prefix: str, target: tuple[str | None, str | None, str | None], needed_by: str
    ) -> None:
        """A Function Compute function to invoke: `PREFIX_ENDPOINT`, `_SERVICE`, `_FUNCTION`
        and the credentials that sign the invocation."""
        endpoint, service, function = target
        for variable, value in (
            (f"{prefix}_ENDPOINT", endpoint),
            (f"{prefix}_SERVICE", service),
            (f"{prefix}_FUNCTION", function),
            ("ALIBABA_CLOUD_ACCESS_KEY_ID", self.access_key_id),
            ("ALIBABA_CLOUD_ACCESS_KEY_SECRET", self.access_key_secret),
        ):
            if not value:
                raise ConfigError(f"{variable} is not set: {needed_by} needs it")
        _check_url(f"{prefix}_ENDPOINT", str(endpoint))

    def _check_fc(self) -> None:
        self._check_function(
            "RELAY_FC",
            (self.fc_endpoint, self.fc_service, self.fc_function),
            "RELAY_PUBLISHER=fc",
        )
        if self.fc_invocation_type not in ("async", "sync"):
            raise ConfigError(
                f"RELAY_FC_INVOCATION_TYPE must be async or sync, got {self.fc_invocation_type!r}"
            )

    @property
    def attempt_seconds(self) -> float:
        """The longest one attempt may take: connect and read timeout, then the settle."""
        return self.connect_timeout_seconds + self.http_timeout_seconds + SETTLE_ALLOWANCE_SECONDS

    @property
    def connect_timeout_seconds(self) -> float:
        return min(5.0, self.http_timeout_seconds)


_NUMBERS: dict[str, tuple[str, type[int] | type[float]]] = {
    "max_attempts": ("RELAY_MAX_ATTEMPTS", int),
    "lock_timeout_seconds": ("RELAY_LOCK_TIMEOUT_SECONDS", float),
    "backoff_base_seconds": ("RELAY_BACKOFF_BASE_SECONDS", float),
    "backoff_max_seconds": ("RELAY_BACKOFF_MAX_SECONDS", float),
    "batch_size": ("RELAY_BATCH_SIZE", int),
    "concurrency": ("RELAY_CONCURRENCY", int),
    "time_budget_seconds": ("RELAY_TIME_BUDGET_SECONDS", float),
    "follow_poll_seconds": ("RELAY_FOLLOW_POLL_SECONDS", float),
    "http_timeout_seconds": ("RELAY_HTTP_TIMEOUT_SECONDS", float),
    "firestore_timeout_seconds": ("RELAY_FIRESTORE_TIMEOUT_SECONDS", float),
    "retention_seconds": ("OUTBOX_RETENTION_SECONDS", float),
    "breaker_threshold": ("RELAY_BREAKER_THRESHOLD", int),
    "partitions": ("RELAY_PARTITIONS", int),
    "partitions_per_claim": ("RELAY_PARTITIONS_PER_CLAIM", int),
    "fan_out_max": ("RELAY_FAN_OUT_MAX", int),
    "fan_out_events": ("RELAY_FAN_OUT_EVENTS", int),
    "ramp_rate": ("RELAY_RAMP_RATE", int),
    "ramp_step_seconds": ("RELAY_RAMP_STEP_SECONDS", float),
}


def load_relay_config(environ: Mapping[str, str] | None = None) -> RelayConfig:
    """Read the relay's variables like `load_settings()` does; `ConfigError` names the bad one."""
    get = env_reader(environ)
    numbers: dict[str, Any] = {}
    for name, (variable, kind) in _NUMBERS.items():
        raw = get(variable)
        if raw is not None:
            numbers[name] = _parse_number(variable, raw, kind)
    return RelayConfig(
        publisher=(get("RELAY_PUBLISHER") or "http").lower(),
        downstream_url=get("DOWNSTREAM_SERVICE_URL"),
        event_source=get("RELAY_EVENT_SOURCE"),
        fc_endpoint=get("RELAY_FC_ENDPOINT"),
        fc_service=get("RELAY_FC_SERVICE"),
        fc_function=get("RELAY_FC_FUNCTION"),
        fc_qualifier=get("RELAY_FC_QUALIFIER"),
        fc_invocation_type=(get("RELAY_FC_INVOCATION_TYPE") or "async").lower(),
        mns_endpoint=get("RELAY_MNS_ENDPOINT"),
        mns_queue=get("RELAY_MNS_QUEUE"),
        mns_topic=get("RELAY_MNS_TOPIC"),
        eventbridge_endpoint=get("RELAY_EVENTBRIDGE_ENDPOINT"),
        eventbridge_bus=get("RELAY_EVENTBRIDGE_BUS"),
        rocketmq_endpoints=get("RELAY_ROCKETMQ_ENDPOINTS"),
        rocketmq_topic=get("RELAY_ROCKETMQ_TOPIC"),
        rocketmq_fifo=flag("RELAY_ROCKETMQ_FIFO", get("RELAY_ROCKETMQ_FIFO")),
        rocketmq_tls=flag("RELAY_ROCKETMQ_TLS", get("RELAY_ROCKETMQ_TLS")),
        rocketmq_namespace=get("RELAY_ROCKETMQ_NAMESPACE"),
        rocketmq_access_key=get("RELAY_ROCKETMQ_ACCESS_KEY"),
        rocketmq_secret_key=get("RELAY_ROCKETMQ_SECRET_KEY"),
        amqp_url=get("RELAY_AMQP_URL"),
        amqp_exchange=get("RELAY_AMQP_EXCHANGE") or "",
        amqp_routing_key=get("RELAY_AMQP_ROUTING_KEY"),
        access_key_id=get("ALIBABA_CLOUD_ACCESS_KEY_ID"),
        access_key_secret=get("ALIBABA_CLOUD_ACCESS_KEY_SECRET"),
        security_token=get("ALIBABA_CLOUD_SECURITY_TOKEN"),
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
    value = float(_parse_number(variable, raw, float))
    if value < 0:
        raise ConfigError(f"{variable} must be at least 0, got {raw!r}")
    return value


def _signing_secrets(value: str | None) -> tuple[str, ...]:
    try:
        return parse_secrets(value)
    except ValueError as exc:
        raise ConfigError(f"RELAY_SIGNING_SECRET: {exc}") from None


def _check_url(variable: str, url: str) -> None:
    # The message names the problem, never the URL: its path, query or user info may hold a
    # token.
    problem = url_problem(url)
    if problem:
        raise ConfigError(f"{variable} must be a usable http:// or https:// URL: {problem}")


def _parse_number(variable: str, raw: str, kind: type[int] | type[float]) -> int | float:
    try:
        value = kind(raw)
    except ValueError:
        what = "a whole number" if kind is int else "a number of seconds"
        raise ConfigError(f"{variable} must be {what}, got {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{variable} must be a finite number, got {raw!r}")
    return value


def _at_least(variable: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{variable} must be a whole number >= {minimum}, got {value!r}")
