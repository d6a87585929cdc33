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

from typing import TYPE_CHECKING

from firestore_outbox import edge
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

if TYPE_CHECKING:
    from firestore_outbox.config.loader import Configuration
    from firestore_outbox.config.shortcuts import load_settings
    from firestore_outbox.consumer import (
        Inbox,
        InboxStatus,
        MalformedDelivery,
        ReceivedEvent,
        Verdict,
        verify_event,
        verify_kafka_message,
        verify_request,
    )
    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.function_compute import HttpFunction, RelayFunction
    from firestore_outbox.idempotency import IdempotencyASGIMiddleware, IdempotencyMiddleware
    from firestore_outbox.producer import (
        FirestoreUnitOfWork,
        Nudger,
        OutboxRepository,
        Repository,
        get_db_client,
        nudger_for,
    )
    from firestore_outbox.relay import (
        AccessKeySettings,
        AmqpSettings,
        Delivery,
        EventBridgeSettings,
        FanOutSettings,
        Fc3Settings,
        FcSettings,
        HttpSettings,
        MnsSettings,
        Outcome,
        PartitionSettings,
        Publisher,
        PublishResult,
        RampSettings,
        Relay,
        RelayConfig,
        RocketMqSettings,
        RunStatus,
        RunSummary,
        StopReason,
        load_relay_config,
    )
    from firestore_outbox.signing import InvalidSignature, Signer

# The names most users need, for every audience at once; each audience's own short list is
# its module's `__all__`: `firestore_outbox.producer` (writing events), `.relay` (running the
# relay), `.function_compute` (deploying it), `.consumer` (consuming), `.idempotency` (the
# front door), `.example` (the reference order application). Each lazy name is listed once,
# in the type-only imports above, which `lazy_exports` reads (one source of truth).
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
    "HttpFunction",
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
    "RelayFunction",
    "Repository",
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
    "verify_kafka_message",
    "verify_request",
]


__getattr__ = lazy_exports(__name__)


def _composition_root() -> edge.Loader:
    # Imported when a convenience given no settings first asks (`import firestore_outbox`
    # stays fast); the folders below ask `edge`, never `firestore_outbox.config` itself.
    from firestore_outbox.config.loader import Configuration

    return Configuration


edge.fill(_composition_root)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
