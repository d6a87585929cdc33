"""Errors raised to callers. All share `OutboxError`; invalid input is also a `ValueError`."""

from __future__ import annotations

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


class OutboxError(Exception):
    """Base class of every error this library raises on purpose."""


class InvalidInput(OutboxError, ValueError):
    """The caller passed something that must not be written; nothing was written."""


class DocumentTooLarge(InvalidInput):
    """A document would exceed Firestore's 1 MiB limit."""


class BatchTooLarge(InvalidInput):
    """The unit of work would exceed what Firestore accepts in one commit."""


class ConfigError(OutboxError, ValueError):
    """A setting is missing or malformed; the message names the environment variable."""


class UnitOfWorkClosed(OutboxError):
    """The unit of work was already committed or discarded."""


class CommitFailed(OutboxError):
    """Firestore rejected the batch; nothing in it was written."""


class DocumentAlreadyExists(CommitFailed):
    """A `create` in the batch hit an existing document, so the whole batch was rejected."""


class CommitOutcomeUnknown(OutboxError):
    """Firestore never answered whether the batch committed, and reading it back failed too.

    Not a `CommitFailed`: the batch may have landed. `paths` names the documents the batch
    creates and `token` the commit token they carry if it landed (field `commitToken`), so
    a caller can look later; repeating the same writes with the same ids cannot write twice.
    """

    def __init__(self, message: str, *, paths: list[str], token: str) -> None:
        super().__init__(message)
        self.paths = paths
        self.token = token


class IdempotencyConflict(OutboxError):
    """An idempotency key was reused with different arguments; nothing was written."""
