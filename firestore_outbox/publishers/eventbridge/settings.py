"""The `eventbridge` publisher's settings: the endpoint, the event bus and the AccessKey."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from firestore_outbox.numbers import Get
from firestore_outbox.publishers.settings import (
    AccessKeySettings,
    PublisherSettings,
    required,
    usable_url,
)


@dataclass(frozen=True, kw_only=True)
class EventBridgeSettings(PublisherSettings):
    """`RELAY_EVENTBRIDGE_ENDPOINT` and `RELAY_EVENTBRIDGE_BUS`
    (`firestore_outbox.publishers.eventbridge.publisher`), signed with the AccessKey."""

    name: ClassVar[str] = "eventbridge"
    endpoint: str
    bus: str
    access_key: AccessKeySettings = field(default_factory=AccessKeySettings)

    def __post_init__(self) -> None:
        required(
            "RELAY_PUBLISHER=eventbridge",
            ("RELAY_EVENTBRIDGE_ENDPOINT", self.endpoint),
            ("RELAY_EVENTBRIDGE_BUS", self.bus),
            *self.access_key.required(),
        )
        usable_url("RELAY_EVENTBRIDGE_ENDPOINT", self.endpoint)

    @classmethod
    def from_environment(cls, get: Get) -> EventBridgeSettings:
        return cls(
            endpoint=get("RELAY_EVENTBRIDGE_ENDPOINT") or "",
            bus=get("RELAY_EVENTBRIDGE_BUS") or "",
            access_key=AccessKeySettings.from_environment(get),
        )

    def destination(self) -> str:
        return self.bus

    def secrets(self) -> tuple[str, ...]:
        return self.access_key.secrets()
