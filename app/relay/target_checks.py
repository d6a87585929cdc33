"""The configuration checks of the message-service publishers (`mns`, `eventbridge`): each
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
