"""firestore-outbox: order + outbox event in one Firestore batch, relayed downstream."""

from app.errors import (
    BatchTooLarge,
    CommitFailed,
    ConfigError,
    DocumentAlreadyExists,
    DocumentTooLarge,
    IdempotencyConflict,
    InvalidInput,
    OutboxError,
    UnitOfWorkClosed,
)

__all__ = [
    "BatchTooLarge",
    "CommitFailed",
    "ConfigError",
    "DocumentAlreadyExists",
    "DocumentTooLarge",
    "IdempotencyConflict",
    "InvalidInput",
    "OutboxError",
    "UnitOfWorkClosed",
]
