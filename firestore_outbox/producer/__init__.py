"""Writing events: what application code that commits business writes and their events needs.

    from firestore_outbox.producer import FirestoreUnitOfWork, get_db_client

    with FirestoreUnitOfWork(get_db_client()) as uow:
        uow.outbox.add({"eventType": "OrderShipped", "aggregateType": "order",
                        "aggregateId": "o-1", "payload": {"carrier": "sf"}})

`Repository` is the base for an application's own repositories on the same unit of work
(`firestore_outbox.example.OrderRepository` is one; docs/concepts/your-aggregates.md builds
another); `checked_id`, `label_problem`,
`json_value_problem` and `MAX_WRITES_PER_BATCH` check input against Firestore's limits before
anything is queued; `bounded_retry` keeps a read of your own within a deadline. The errors are
`firestore_outbox.errors`'s, the stored field names `firestore_outbox.fields`'s. Names load on
first use (PEP 562): importing this connects to nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox._lazy import lazy_exports

if TYPE_CHECKING:
    from firestore_outbox.firestore.deadline import bounded_retry
    from firestore_outbox.firestore.limits import (
        MAX_WRITES_PER_BATCH,
        json_value_problem,
        label_problem,
    )
    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.nudge import Nudger
    from firestore_outbox.producer.defaults import get_db_client, nudger_for
    from firestore_outbox.producer.repository import OutboxRepository, Repository, checked_id
    from firestore_outbox.producer.uow import FirestoreUnitOfWork

__all__ = [
    "MAX_WRITES_PER_BATCH",
    "FirestoreUnitOfWork",
    "Nudger",
    "OutboxRepository",
    "Repository",
    "Settings",
    "bounded_retry",
    "checked_id",
    "get_db_client",
    "json_value_problem",
    "label_problem",
    "nudger_for",
]

__getattr__ = lazy_exports(__name__)
