"""The `mns` publisher's settings: the endpoint, a queue or a topic, and the AccessKey."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import Get
from firestore_outbox.publishers.settings import (
    AccessKeySettings,
    PublisherSettings,
    required,
    usable_url,
)


@dataclass(frozen=True, kw_only=True)
class MnsSettings(PublisherSettings):
    """`RELAY_MNS_ENDPOINT` and exactly one of `RELAY_MNS_QUEUE` (batched sends) and
    `RELAY_MNS_TOPIC` (`firestore_outbox.publishers.mns.publisher`), signed with the
    AccessKey."""

    name: ClassVar[str] = "mns"
    endpoint: str
    queue: str | None = None
    topic: str | None = None
    access_key: AccessKeySettings = field(default_factory=AccessKeySettings)

    def __post_init__(self) -> None:
        required(
            "RELAY_PUBLISHER=mns",
            ("RELAY_MNS_ENDPOINT", self.endpoint),
            *self.access_key.required(),
        )
        usable_url("RELAY_MNS_ENDPOINT", self.endpoint)
        if bool(self.queue) == bool(self.topic):
            raise ConfigError(
                "RELAY_PUBLISHER=mns needs exactly one of RELAY_MNS_QUEUE and RELAY_MNS_TOPIC"
            )

    @classmethod
    def from_environment(cls, get: Get) -> MnsSettings:
        return cls(
            endpoint=get("RELAY_MNS_ENDPOINT") or "",
            queue=get("RELAY_MNS_QUEUE"),
            topic=get("RELAY_MNS_TOPIC"),
            access_key=AccessKeySettings.from_environment(get),
        )

    def destination(self) -> str:
        return self.queue or self.topic or ""

    def secrets(self) -> tuple[str, ...]:
        return self.access_key.secrets()
