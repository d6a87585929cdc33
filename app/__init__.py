"""firestore-outbox: order + outbox event in one Firestore batch, relayed downstream."""

import warnings

from app.errors import (
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

# google-api-core warns once, on import and straight to stderr, that Python 3.10 is past its
# support; 3.10 is Function Compute's runtime, chosen on purpose (README, Deploy), and a plain
# text line there would break the function's JSON logs. Only that notice is silenced.
warnings.filterwarnings(
    "ignore", category=FutureWarning, module=r"google\.api_core\._python_version_support"
)

__all__ = [
    "BatchTooLarge",
    "CommitFailed",
    "CommitOutcomeUnknown",
    "ConfigError",
    "DocumentAlreadyExists",
    "DocumentTooLarge",
    "IdempotencyConflict",
    "InvalidInput",
    "OutboxError",
    "UnitOfWorkClosed",
]
