"""The message-service publishers' settings (`mns`, `eventbridge`, `rocketmq`): each one's
destination and credentials, read from its variables and checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.settings import AccessKeySettings, Get, flag, required, usable_url


@dataclass(frozen=True, kw_only=True)
class MnsSettings(AccessKeySettings):
    """`RELAY_MNS_ENDPOINT` and a queue or a topic (`firestore_outbox/publishers/mns/publisher.py`),
    signed with the
    AccessKey."""

    mns_endpoint: str | None = None
    mns_queue: str | None = None
    mns_topic: str | None = None

    def _check_mns(self) -> None:
        """The endpoint, exactly one of the queue and the topic, and the AccessKey pair."""
        required(
            "RELAY_PUBLISHER=mns", ("RELAY_MNS_ENDPOINT", self.mns_endpoint), *self._access_key()
        )
        usable_url("RELAY_MNS_ENDPOINT", str(self.mns_endpoint))
        if bool(self.mns_queue) == bool(self.mns_topic):
            raise ConfigError(
                "RELAY_PUBLISHER=mns needs exactly one of RELAY_MNS_QUEUE and RELAY_MNS_TOPIC"
            )


@dataclass(frozen=True, kw_only=True)
class EventBridgeSettings(AccessKeySettings):
    """`RELAY_EVENTBRIDGE_ENDPOINT` and the event bus
    (`firestore_outbox/publishers/eventbridge.py`), signed with
    the AccessKey."""

    eventbridge_endpoint: str | None = None
    eventbridge_bus: str | None = None

    def _check_eventbridge(self) -> None:
        required(
            "RELAY_PUBLISHER=eventbridge",
            ("RELAY_EVENTBRIDGE_ENDPOINT", self.eventbridge_endpoint),
            ("RELAY_EVENTBRIDGE_BUS", self.eventbridge_bus),
            *self._access_key(),
        )
        usable_url("RELAY_EVENTBRIDGE_ENDPOINT", str(self.eventbridge_endpoint))


@dataclass(frozen=True, kw_only=True)
class RocketMqSettings:
    """The gRPC proxy (`RELAY_ROCKETMQ_ENDPOINTS`, `host:port`, several separated by `;`), the
    topic and its kind, and the instance's own user name and password (none for open brokers)
    (`firestore_outbox/publishers/rocketmq/publisher.py`)."""

    rocketmq_endpoints: str | None = None
    rocketmq_topic: str | None = None
    rocketmq_fifo: bool = False
    rocketmq_tls: bool = False
    rocketmq_namespace: str | None = None
    rocketmq_access_key: str | None = None
    rocketmq_secret_key: str | None = field(default=None, repr=False)

    def _check_rocketmq(self) -> None:
        """The endpoints, the topic, and the access key and secret key together or neither."""
        required(
            "RELAY_PUBLISHER=rocketmq",
            ("RELAY_ROCKETMQ_ENDPOINTS", self.rocketmq_endpoints),
            ("RELAY_ROCKETMQ_TOPIC", self.rocketmq_topic),
        )
        for endpoint in str(self.rocketmq_endpoints).split(";"):
            host, _, port = endpoint.strip().rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ConfigError(
                    "RELAY_ROCKETMQ_ENDPOINTS must be host:port of the gRPC proxy (several "
                    "separated by ;)"
                )
        if bool(self.rocketmq_access_key) != bool(self.rocketmq_secret_key):
            raise ConfigError(
                "RELAY_ROCKETMQ_ACCESS_KEY and RELAY_ROCKETMQ_SECRET_KEY go together: set both "
                "or neither"
            )


def read_message_services(get: Get) -> dict[str, Any]:
    """The fields of `MnsSettings`, `EventBridgeSettings` and `RocketMqSettings` (not the
    AccessKey's) from the environment."""
    return {
        "mns_endpoint": get("RELAY_MNS_ENDPOINT"),
        "mns_queue": get("RELAY_MNS_QUEUE"),
        "mns_topic": get("RELAY_MNS_TOPIC"),
        "eventbridge_endpoint": get("RELAY_EVENTBRIDGE_ENDPOINT"),
        "eventbridge_bus": get("RELAY_EVENTBRIDGE_BUS"),
        "rocketmq_endpoints": get("RELAY_ROCKETMQ_ENDPOINTS"),
        "rocketmq_topic": get("RELAY_ROCKETMQ_TOPIC"),
        "rocketmq_fifo": flag("RELAY_ROCKETMQ_FIFO", get("RELAY_ROCKETMQ_FIFO")),
        "rocketmq_tls": flag("RELAY_ROCKETMQ_TLS", get("RELAY_ROCKETMQ_TLS")),
        "rocketmq_namespace": get("RELAY_ROCKETMQ_NAMESPACE"),
        "rocketmq_access_key": get("RELAY_ROCKETMQ_ACCESS_KEY"),
        "rocketmq_secret_key": get("RELAY_ROCKETMQ_SECRET_KEY"),
    }
