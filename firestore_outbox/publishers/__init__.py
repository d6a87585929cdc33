"""Publishers: the settings that pick where the relay delivers, and the interface a publisher of
your own implements.

    from firestore_outbox import RelayConfig
    from firestore_outbox.publishers import HttpSettings

    config = RelayConfig(publisher=HttpSettings(url="https://billing.example/events"))

One settings class per `RELAY_PUBLISHER` value (`HttpSettings`, `FcSettings`, `Fc3Settings`,
`MnsSettings`, `EventBridgeSettings`, `RocketMqSettings`, `AmqpSettings`, `KafkaSettings`),
`AccessKeySettings` for the Alibaba Cloud ones, `PublisherSettings` their base. A `Publisher`
is given each `Delivery` and answers a `PublishResult` whose `Outcome` decides the event's next
state. `keep_rocketmq_out_of_home()` is for a process of your own running a RocketMQ relay:
its client then writes no `~/logs`. Names load on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox._lazy import lazy_exports

if TYPE_CHECKING:
    from firestore_outbox.publishers.amqp.settings import AmqpSettings
    from firestore_outbox.publishers.base import Delivery, Outcome, Publisher, PublishResult
    from firestore_outbox.publishers.eventbridge.settings import EventBridgeSettings
    from firestore_outbox.publishers.fc.settings import Fc3Settings, FcSettings
    from firestore_outbox.publishers.http.settings import HttpSettings
    from firestore_outbox.publishers.kafka.settings import KafkaSettings
    from firestore_outbox.publishers.mns.settings import MnsSettings
    from firestore_outbox.publishers.rocketmq.client import keep_rocketmq_out_of_home
    from firestore_outbox.publishers.rocketmq.settings import RocketMqSettings
    from firestore_outbox.publishers.settings import AccessKeySettings, PublisherSettings

__all__ = [
    "AccessKeySettings",
    "AmqpSettings",
    "Delivery",
    "EventBridgeSettings",
    "Fc3Settings",
    "FcSettings",
    "HttpSettings",
    "KafkaSettings",
    "MnsSettings",
    "Outcome",
    "PublishResult",
    "Publisher",
    "PublisherSettings",
    "RocketMqSettings",
    "keep_rocketmq_out_of_home",
]

__getattr__ = lazy_exports(__name__)
