"""Errors raised to callers. All share `OutboxError`; invalid input is also a `ValueError`."""

from __future__ import annotations


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


class IdempotencyConflict(OutboxError):
    """An idempotency key was reused with different arguments; nothing was written."""
