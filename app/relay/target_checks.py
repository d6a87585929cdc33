"""The configuration checks of the message-service publishers (`mns`, `eventbridge`,
`rocketmq`): each
names the variable that is missing or wrong, and never echoes a URL or a secret."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.errors import ConfigError
from app.urls import url_problem

if TYPE_CHECKING:
    from app.relay.config import RelayConfig


def check_mns(config: RelayConfig) -> None:
    """`RELAY_MNS_ENDPOINT`, exactly one of `RELAY_MNS_QUEUE` and `RELAY_MNS_TOPIC`, and the
    AccessKey pair."""
    _required("mns", ("RELAY_MNS_ENDPOINT", config.mns_endpoint), *_keys(config))
    _usable_url("RELAY_MNS_ENDPOINT", str(config.mns_endpoint))
    if bool(config.mns_queue) == bool(config.mns_topic):
        raise ConfigError(
            "RELAY_PUBLISHER=mns needs exactly one of RELAY_MNS_QUEUE and RELAY_MNS_TOPIC"
        )


def check_eventbridge(config: RelayConfig) -> None:
    """`RELAY_EVENTBRIDGE_ENDPOINT`, `RELAY_EVENTBRIDGE_BUS` and the AccessKey pair."""
    _required(
        "eventbridge",
        ("RELAY_EVENTBRIDGE_ENDPOINT", config.eventbridge_endpoint),
        ("RELAY_EVENTBRIDGE_BUS", config.eventbridge_bus),
        *_keys(config),
    )
    _usable_url("RELAY_EVENTBRIDGE_ENDPOINT", str(config.eventbridge_endpoint))


def check_rocketmq(config: RelayConfig) -> None:
    """`RELAY_ROCKETMQ_ENDPOINTS` (`host:port`, several separated by `;`), the topic, and the
    access key and secret key together or neither."""
    _required(
        "rocketmq",
        ("RELAY_ROCKETMQ_ENDPOINTS", config.rocketmq_endpoints),
        ("RELAY_ROCKETMQ_TOPIC", config.rocketmq_topic),
    )
    for endpoint in str(config.rocketmq_endpoints).split(";"):
        host, _, port = endpoint.strip().rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError(
                "RELAY_ROCKETMQ_ENDPOINTS must be host:port of the gRPC proxy (several "
                "separated by ;)"
            )
    if bool(config.rocketmq_access_key) != bool(config.rocketmq_secret_key):
        raise ConfigError(
            "RELAY_ROCKETMQ_ACCESS_KEY and RELAY_ROCKETMQ_SECRET_KEY go together: set both "
            "or neither"
        )


def flag(variable: str, value: str | None) -> bool:
    """A true/false variable (unset: false); `ConfigError` naming it for anything else."""
    if value is None or value.lower() in ("false", "0", "no"):
        return False
    if value.lower() in ("true", "1", "yes"):
        return True
    raise ConfigError(f"{variable} must be true or false, got {value!r}")


def _keys(config: RelayConfig) -> tuple[tuple[str, str | None], ...]:
    return (
        ("ALIBABA_CLOUD_ACCESS_KEY_ID", config.access_key_id),
        ("ALIBABA_CLOUD_ACCESS_KEY_SECRET", config.access_key_secret),
    )


def _required(publisher: str, *variables: tuple[str, str | None]) -> None:
    for variable, value in variables:
        if not value:
            raise ConfigError(f"{variable} is not set: RELAY_PUBLISHER={publisher} needs it")


def _usable_url(variable: str, url: str) -> None:
    problem = url_problem(url)
    if problem:
        raise ConfigError(f"{variable} must be a usable http:// or https:// URL: {problem}")
