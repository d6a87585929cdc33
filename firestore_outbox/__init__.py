"""firestore-outbox: a transactional outbox on Google Cloud Firestore, relayed downstream.

The public API is what `__all__` lists; every other module is internal and may change between
releases. Importing this package connects to nothing and loads the relay, the inbox and the
rest only when one of their names is first used (PEP 562), so `import firestore_outbox` and
`outbox --version` stay fast.

    from firestore_outbox import FirestoreUnitOfWork, get_db_client

    db = get_db_client()
    with FirestoreUnitOfWork(db) as uow:
        uow.outbox.add({"eventType": "OrderShipped", "aggregateType": "order",
                        "aggregateId": "o-1", "payload": {"carrier": "sf"}})
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from firestore_outbox._lazy import lazy_exports
from firestore_outbox.errors import (
    BatchTooLarge,
    CommitFailed,
    CommitOutcomeUnknown,
    ConfigError,
    DocumentAlreadyExists,
    DocumentTooLarge,
    IdempotencyConflict,
    InvalidInput,
    OutboxError,
    UnitOfWorkClosed,
)
from firestore_outbox.fields import EventStatus

# google-api-core warns once, on import and straight to stderr, that Python 3.10 is past its
# support; 3.10 is Function Compute's runtime, chosen on purpose (docs: Deploy), and a plain
# text line there would break the function's JSON logs. Only that notice is silenced.
warnings.filterwarnings(
    "ignore", category=FutureWarning, module=r"google\.api_core\._python_version_support"
)

if TYPE_CHECKING:
    from firestore_outbox.config.loader import Configuration
    from firestore_outbox.config.shortcuts import (
        get_db_client,
        load_relay_config,
        load_settings,
        nudger_for,
    )
    from firestore_outbox.consumer.events import (
        MalformedDelivery,
        ReceivedEvent,
        verify_event,
        verify_request,
    )
    from firestore_outbox.consumer.inbox import Inbox, InboxStatus, Verdict
    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.idempotency import IdempotencyASGIMiddleware, IdempotencyMiddleware
    from firestore_outbox.nudge import Nudger
    from firestore_outbox.producer.repository import OutboxRepository
    from firestore_outbox.producer.uow import FirestoreUnitOfWork
    from firestore_outbox.publishers.amqp.settings import AmqpSettings
    from firestore_outbox.publishers.base import Delivery, Outcome, Publisher, PublishResult
    from firestore_outbox.publishers.eventbridge.settings import EventBridgeSettings
    from firestore_outbox.publishers.fc.settings import Fc3Settings, FcSettings
    from firestore_outbox.publishers.http.settings import HttpSettings
    from firestore_outbox.publishers.mns.settings import MnsSettings
    from firestore_outbox.publishers.rocketmq.settings import RocketMqSettings
    from firestore_outbox.publishers.settings import AccessKeySettings
    from firestore_outbox.relay.config import RelayConfig
    from firestore_outbox.relay.core import Relay
    from firestore_outbox.relay.fan_out import FanOutSettings
    from firestore_outbox.relay.partitioned.settings import PartitionSettings
    from firestore_outbox.relay.ramp import RampSettings
    from firestore_outbox.relay.summary import RunStatus, RunSummary, StopReason
    from firestore_outbox.signing import InvalidSignature, Signer

# name -> the internal module that defines it, imported on first use
_LAZY = {
    "Configuration": "firestore_outbox.config.loader",
    "get_db_client": "firestore_outbox.config.shortcuts",
    "load_relay_config": "firestore_outbox.config.shortcuts",
    "load_settings": "firestore_outbox.config.shortcuts",
    "nudger_for": "firestore_outbox.config.shortcuts",
    "MalformedDelivery": "firestore_outbox.consumer.events",
    "ReceivedEvent": "firestore_outbox.consumer.events",
    "verify_event": "firestore_outbox.consumer.events",
    "verify_request": "firestore_outbox.consumer.events",
    "Inbox": "firestore_outbox.consumer.inbox",
    "InboxStatus": "firestore_outbox.consumer.inbox",
    "Verdict": "firestore_outbox.consumer.inbox",
    "Settings": "firestore_outbox.firestore.settings",
    "IdempotencyASGIMiddleware": "firestore_outbox.idempotency",
    "IdempotencyMiddleware": "firestore_outbox.idempotency",
    "Nudger": "firestore_outbox.nudge",
    "OutboxRepository": "firestore_outbox.producer.repository",
    "FirestoreUnitOfWork": "firestore_outbox.producer.uow",
    "Delivery": "firestore_outbox.publishers.base",
    "Outcome": "firestore_outbox.publishers.base",
    "Publisher": "firestore_outbox.publishers.base",
    "PublishResult": "firestore_outbox.publishers.base",
    "AccessKeySettings": "firestore_outbox.publishers.settings",
    "AmqpSettings": "firestore_outbox.publishers.amqp.settings",
    "EventBridgeSettings": "firestore_outbox.publishers.eventbridge.settings",
    "FcSettings": "firestore_outbox.publishers.fc.settings",
    "Fc3Settings": "firestore_outbox.publishers.fc.settings",
    "HttpSettings": "firestore_outbox.publishers.http.settings",
    "MnsSettings": "firestore_outbox.publishers.mns.settings",
    "RocketMqSettings": "firestore_outbox.publishers.rocketmq.settings",
    "FanOutSettings": "firestore_outbox.relay.fan_out",
    "PartitionSettings": "firestore_outbox.relay.partitioned.settings",
    "RampSettings": "firestore_outbox.relay.ramp",
    "RelayConfig": "firestore_outbox.relay.config",
    "Relay": "firestore_outbox.relay.core",
    "RunStatus": "firestore_outbox.relay.summary",
    "RunSummary": "firestore_outbox.relay.summary",
    "StopReason": "firestore_outbox.relay.summary",
    "InvalidSignature": "firestore_outbox.signing",
    "Signer": "firestore_outbox.signing",
}

__all__ = [
    "AccessKeySettings",
    "AmqpSettings",
    "BatchTooLarge",
    "CommitFailed",
    "CommitOutcomeUnknown",
    "ConfigError",
    "Configuration",
    "Delivery",
    "DocumentAlreadyExists",
    "DocumentTooLarge",
    "EventBridgeSettings",
    "EventStatus",
    "FanOutSettings",
    "Fc3Settings",
    "FcSettings",
    "FirestoreUnitOfWork",
    "HttpSettings",
    "IdempotencyASGIMiddleware",
    "IdempotencyConflict",
    "IdempotencyMiddleware",
    "Inbox",
    "InboxStatus",
    "InvalidInput",
    "InvalidSignature",
    "MalformedDelivery",
    "MnsSettings",
    "Nudger",
    "OutboxError",
    "OutboxRepository",
    "Outcome",
    "PartitionSettings",
    "PublishResult",
    "Publisher",
    "RampSettings",
    "ReceivedEvent",
    "Relay",
    "RelayConfig",
    "RocketMqSettings",
    "RunStatus",
    "RunSummary",
    "Settings",
    "Signer",
    "StopReason",
    "UnitOfWorkClosed",
    "Verdict",
    "get_db_client",
    "load_relay_config",
    "load_settings",
    "nudger_for",
    "verify_event",
    "verify_request",
]


__getattr__ = lazy_exports(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
