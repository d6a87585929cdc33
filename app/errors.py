"""The errors application code catches: the library's (`firestore_outbox.errors`), and the
order domain's own `InvalidOrder`. All share `OutboxError`; invalid input is a `ValueError`."""

from firestore_outbox import (
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
from firestore_outbox.example import InvalidOrder

__all__ = [
    "BatchTooLarge",
    "CommitFailed",
    "CommitOutcomeUnknown",
    "ConfigError",
    "DocumentAlreadyExists",
    "DocumentTooLarge",
    "IdempotencyConflict",
    "InvalidInput",
    "InvalidOrder",
    "OutboxError",
    "UnitOfWorkClosed",
]
