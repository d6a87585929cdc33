"""The `rocketmq` publisher's settings: the gRPC proxy, the topic and its kind, and the
instance's own user name and password."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import Get, flag
from firestore_outbox.publishers.settings import PublisherSettings, port_problem, required


@dataclass(frozen=True, kw_only=True)
class RocketMqSettings(PublisherSettings):
    """The gRPC proxy (`RELAY_ROCKETMQ_ENDPOINTS`, `host:port`, several separated by `;`), the
    topic and its kind (`_FIFO`), TLS, the namespace, and the instance's own user name and
    password (`_ACCESS_KEY`, `_SECRET_KEY`; none for open brokers)
    (`firestore_outbox.publishers.rocketmq.publisher`)."""

    name: ClassVar[str] = "rocketmq"
    endpoints: str
    topic: str
    fifo: bool = False
    tls: bool = False
    namespace: str | None = None
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        """The endpoints, the topic, and the access key and secret key together or neither."""
        required(
            "RELAY_PUBLISHER=rocketmq",
            ("RELAY_ROCKETMQ_ENDPOINTS", self.endpoints),
            ("RELAY_ROCKETMQ_TOPIC", self.topic),
        )
        for endpoint in self.endpoints.split(";"):
            host, _, port = endpoint.strip().rpartition(":")
            problem = "no host" if not host else port_problem(port)
            if problem:
                raise ConfigError(
                    "RELAY_ROCKETMQ_ENDPOINTS must be host:port of the gRPC proxy (several "
                    f"separated by ;): {problem}"
                )
        if bool(self.access_key) != bool(self.secret_key):
            raise ConfigError(
                "RELAY_ROCKETMQ_ACCESS_KEY and RELAY_ROCKETMQ_SECRET_KEY go together: set both "
                "or neither"
            )

    @classmethod
    def from_environment(cls, get: Get) -> RocketMqSettings:
        return cls(
            endpoints=get("RELAY_ROCKETMQ_ENDPOINTS") or "",
            topic=get("RELAY_ROCKETMQ_TOPIC") or "",
            fifo=flag("RELAY_ROCKETMQ_FIFO", get("RELAY_ROCKETMQ_FIFO")),
            tls=flag("RELAY_ROCKETMQ_TLS", get("RELAY_ROCKETMQ_TLS")),
            namespace=get("RELAY_ROCKETMQ_NAMESPACE"),
            access_key=get("RELAY_ROCKETMQ_ACCESS_KEY"),
            secret_key=get("RELAY_ROCKETMQ_SECRET_KEY"),
        )

    def destination(self) -> str:
        return self.topic

    def secrets(self) -> tuple[str, ...]:
        return (self.secret_key or "",)
