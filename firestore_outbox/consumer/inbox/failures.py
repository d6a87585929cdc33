"""Whose failure it was: the effect's (an attempt) or Firestore's (not counted against it)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from google.api_core import exceptions as google_exceptions

logger = logging.getLogger(__name__)


def firestore_failure(exc: BaseException) -> bool:
    """An error Firestore raised (a transactional effect reads and writes only through its
    transaction, so such an error inside it is Firestore's, e.g. an Aborted or Unavailable
    read), as opposed to the effect's own failure, which counts as an attempt."""
    return isinstance(exc, google_exceptions.GoogleAPIError)


def contended(exc: BaseException) -> bool:
    """A transaction aborted by contention: a read inside it, or its commit after the client
    library's own retries."""
    if isinstance(exc, google_exceptions.Aborted):
        return True
    return isinstance(exc, ValueError) and isinstance(exc.__cause__, google_exceptions.Aborted)


@contextlib.contextmanager
def logged_instead(event_id: str) -> Iterator[None]:
    """Recording a failed effect may fail too. The effect's exception is the one the caller
    must see, so the recording's error is logged here, not raised over it. The record stays as
    it was: the attempt goes uncounted, or its lease expires and the next delivery takes over."""
    try:
        yield
    except Exception as exc:
        logger.warning(
            "inbox: could not record the failure of event %s: %s: %s",
            event_id,
            type(exc).__name__,
            exc,
        )
