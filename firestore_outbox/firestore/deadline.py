"""One Firestore deadline (`FIRESTORE_TIMEOUT_SECONDS`) for the operations commands and commits.

Left to its defaults, google-cloud-firestore retries an unanswered query for 300 s and a
commit or read for 60 s, so an unreachable Firestore looked like a hang. Here every call gets
`timeout=deadline` and a retry of transient errors that gives up at the same deadline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from google.api_core import exceptions as google_exceptions
from google.api_core import gapic_v1
from google.api_core import retry as retries

from firestore_outbox.firestore.raw import rewrap_methods

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.firestore.settings import Settings

FIRESTORE_HOST = "firestore.googleapis.com"
# What "did not answer" means: no answer in time, or no connection to ask on.
UNANSWERED = (
    google_exceptions.DeadlineExceeded,
    google_exceptions.ServiceUnavailable,
    google_exceptions.RetryError,
)


def bounded_retry(deadline: float) -> retries.Retry:
    """Retry transient errors, never past `deadline` seconds from the first attempt."""
    return retries.Retry(
        predicate=retries.if_transient_error, initial=0.1, maximum=1.0, timeout=deadline
    )


def with_deadline(db: Client, deadline: float) -> Client:
    """`db` with `timeout=deadline` and `bounded_retry(deadline)` as the default of every
    call, for code that cannot pass them call by call (queries, aggregations, iterators).

    Replaces the client's precomputed GAPIC wrappers (`raw.rewrap_methods`, the one place
    that touches them; tests/unit/firestore/test_deadline.py checks the effect)."""
    from google.cloud.firestore_v1.services.firestore.transports.base import DEFAULT_CLIENT_INFO

    rewrap_methods(
        db,
        lambda method: gapic_v1.method.wrap_method(  # type: ignore[no-untyped-call]
            method,
            default_retry=bounded_retry(deadline),
            default_timeout=deadline,
            client_info=DEFAULT_CLIENT_INFO,
        ),
    )
    return db


def firestore_host(settings: Settings) -> str:
    return settings.emulator_host or FIRESTORE_HOST


def error_class(exc: BaseException) -> str:
    """`DeadlineExceeded`, or `RetryError after ServiceUnavailable` when retries ran out."""
    name = type(exc).__name__
    cause = exc.cause if isinstance(exc, google_exceptions.RetryError) else None
    return f"{name} after {type(cause).__name__}" if cause is not None else name


def unanswered(settings: Settings, exc: BaseException) -> str:
    """The one line for a Firestore that did not answer in time (no message: no secret)."""
    return (
        f"Firestore at {firestore_host(settings)} did not answer within "
        f"{settings.firestore_timeout_seconds:g} s ({error_class(exc)})"
    )
