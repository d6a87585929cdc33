"""Operations on a live outbox: status, requeue, purge, reconcile. The `outbox` command's
subcommands are thin wrappers over these; each takes a client and the collection names."""

from firestore_outbox.ops.documents import event_document
from firestore_outbox.ops.purge import backfill_expiry, purge_processed
from firestore_outbox.ops.reconcile import AggregateAnomalies, Anomalies, find_anomalies
from firestore_outbox.ops.requeue import RequeuePlan, plan_requeue, requeue
from firestore_outbox.ops.status import OutboxStatus, read_status

__all__ = [
    "AggregateAnomalies",
    "Anomalies",
    "OutboxStatus",
    "RequeuePlan",
    "backfill_expiry",
    "event_document",
    "find_anomalies",
    "plan_requeue",
    "purge_processed",
    "read_status",
    "requeue",
]
