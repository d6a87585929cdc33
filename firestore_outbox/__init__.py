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
from firestore_outbox._lazy import PUBLISHERS_MOVED, lazy_exports, moved_to
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
    from firestore_outbox.config.shortcuts import (
        load_idempotency_config,
        load_receiver_config,
        load_relay_config,
        load_settings,
    )
    from firestore_outbox.consumer import Inbox, InboxStatus, verify_request
    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.producer import FirestoreUnitOfWork, OutboxRepository, get_db_client
    from firestore_outbox.relay import Relay, RelayConfig, RunStatus, RunSummary
    from firestore_outbox.signing import InvalidSignature, Signer

# The names most users need, for every audience at once, and the configuration (read from the
# environment only here); each audience's own list is its module's `__all__`:
# `firestore_outbox.producer` (writing events), `.relay` (running the relay), `.publishers`
# (where it delivers), `.function_compute` (deploying it), `.consumer` (consuming),
# `.idempotency` (the front door), `.testing`, `.example` (the reference order application).
# Each lazy name is listed once, in the type-only imports above, which `lazy_exports` reads
# (one source of truth).
__all__ = [
    "BatchTooLarge",
    "CommitFailed",
    "CommitOutcomeUnknown",
    "ConfigError",
    "Configuration",
    "DocumentAlreadyExists",
    "DocumentTooLarge",
    "EventStatus",
    "FirestoreUnitOfWork",
    "IdempotencyConflict",
    "Inbox",
    "InboxStatus",
    "InvalidInput",
    "InvalidSignature",
    "OutboxError",
    "OutboxRepository",
    "Relay",
    "RelayConfig",
    "RunStatus",
    "RunSummary",
    "Settings",
    "Signer",
    "UnitOfWorkClosed",
    "get_db_client",
    "load_idempotency_config",
    "load_receiver_config",
    "load_relay_config",
    "load_settings",
    "verify_request",
]

# Names that left this list for their audience's; they keep importing from here, with a
# DeprecationWarning, for one release (docs/upgrading.md).
_MOVED = {
    **PUBLISHERS_MOVED,
    **moved_to(
        "firestore_outbox.relay",
        ("FanOutSettings", "PartitionSettings", "RampSettings", "StopReason"),
    ),
    **moved_to(
        "firestore_outbox.consumer",
        ("MalformedDelivery", "ReceivedEvent", "Verdict", "verify_event", "verify_kafka_message"),
    ),
    **moved_to("firestore_outbox.producer", ("Nudger", "Repository", "nudger_for")),
    **moved_to("firestore_outbox.function_compute", ("HttpFunction", "RelayFunction")),
    **moved_to(
        "firestore_outbox.idempotency", ("IdempotencyASGIMiddleware", "IdempotencyMiddleware")
    ),
}

__getattr__ = lazy_exports(__name__, _MOVED)


def _composition_root() -> edge.Loader:
    # Imported when a convenience given no settings first asks (`import firestore_outbox`
    # stays fast); the folders below ask `edge`, never `firestore_outbox.config` itself.
    from firestore_outbox.config.loader import Configuration

    return Configuration


edge.fill(_composition_root)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
