"""Operations on a live outbox: status, requeue, purge, reconcile. The `outbox` command's
subcommands are thin wrappers over these; each takes a client and the collection names."""

from app.ops.documents import event_document
from app.ops.purge import backfill_expiry, purge_processed
from app.ops.reconcile import Anomalies, find_anomalies
from app.ops.requeue import RequeuePlan, plan_requeue, requeue
from app.ops.status import OutboxStatus, read_status

__all__ = [
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
