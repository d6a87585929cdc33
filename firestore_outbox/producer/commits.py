"""What a commit did when Firestore's answer did not say: the commit token and the read-back.

A unit of work commits once, and every document it creates carries its commit token (field
`commitToken`, a random hex string unique to that unit of work). A batch is atomic, so one of
its created documents holding the token proves the whole batch landed. The token costs nothing
on the happy path: no read, one Commit. When the commit raises, the timeline decides:

    Commit sent --lands--> answer lost (UNAVAILABLE) --client retries--> ALREADY_EXISTS
        read back: our token is there                 -> committed (not "nothing written")
    Commit sent --answer lost (timeout, no retry)-->
        read back: our token is there                 -> committed
        read back: not there                          -> not landed yet: send it once more;
                                                         a create lands at most once, so the
                                                         two sends cannot both land
        read back fails too                           -> CommitOutcomeUnknown
    Firestore answers and refuses (invalid, denied)   -> CommitFailed: nothing written, no read
    ALREADY_EXISTS and the token is not there         -> another write's document: an
                                                         idempotent replay, an
                                                         IdempotencyConflict, or
                                                         DocumentAlreadyExists
    FAILED_PRECONDITION (a preconditioned update)     -> read back: our token there means
                                                         committed; else CommitFailed

A batch without creates carries no token, so a lost answer leaves its outcome unknown.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions

from firestore_outbox.errors import (
    CommitFailed,
    CommitOutcomeUnknown,
    DocumentAlreadyExists,
    IdempotencyConflict,
)
from firestore_outbox.firestore.deadline import UNANSWERED, bounded_retry, unanswered
from firestore_outbox.firestore.raw import emulator_host
from firestore_outbox.producer.batch import Write, build_batch

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.firestore.settings import Settings

logger = logging.getLogger(__name__)

COMMIT_TOKEN_FIELD = "commitToken"
# Firestore refusing the request as it is: not applied. ALREADY_EXISTS and FAILED_PRECONDITION
# can also answer a retry of an attempt that landed (its creates are there now; its
# preconditioned update moved the document), so they are read back; the others answer the
# request itself and raise CommitFailed at once.
_REFUSALS = (
    google_exceptions.InvalidArgument,
    google_exceptions.FailedPrecondition,
    google_exceptions.OutOfRange,
    google_exceptions.NotFound,
    google_exceptions.AlreadyExists,
    google_exceptions.PermissionDenied,
    google_exceptions.Unauthenticated,
)


class Landing(str, enum.Enum):
    """Whether a batch whose commit raised is in Firestore, as its read-back shows."""

    LANDED = "landed"  # committed: this unit of work's token is there
    REPLAYED = "replayed"  # every guarded create was done by an earlier commit
    NOT_LANDED = "not landed"  # not (yet): sending the batch again is safe


def after_failed_commit(
    db: Client,
    writes: Sequence[Write],
    token: str,
    exc: google_exceptions.GoogleAPIError,
    *,
    timeout: float,
) -> Landing:
    """Find out what the commit that raised `exc` did; raise when it wrote nothing for sure.
    The read-back, retries included, takes at most `timeout` seconds: the caller is waiting."""
    already_exists = isinstance(exc, google_exceptions.AlreadyExists)
    # A batch whose update has a precondition meets its own first send the same way.
    moved = isinstance(exc, google_exceptions.FailedPrecondition)
    if isinstance(exc, _REFUSALS) and not (already_exists or moved):
        raise CommitFailed(f"Firestore rejected the batch: {exc}") from exc
    creates = [w for w in writes if w.op == "create"]
    if not creates and moved:
        raise CommitFailed(f"Firestore rejected the batch: {exc}") from exc
    if not creates:
        raise CommitOutcomeUnknown(
            f"Firestore did not say whether the batch committed ({exc}), and a batch that "
            "creates no document carries no commit token to look for",
            paths=[],
            token=token,
        ) from exc
    stored = _read_back(db, creates, token, exc, timeout)
    if any(fields.get(COMMIT_TOKEN_FIELD) == token for fields in stored.values()):
        return Landing.LANDED
    if moved:
        raise CommitFailed(f"Firestore rejected the batch: {exc}") from exc
    if isinstance(exc, google_exceptions.AlreadyExists):
        if _is_replay(creates, stored):
            return Landing.REPLAYED
        raise DocumentAlreadyExists(f"Firestore rejected the batch: {exc.message}") from exc
    return Landing.NOT_LANDED


def outcome_unknown(writes: Sequence[Write], token: str, exc: Exception) -> CommitOutcomeUnknown:
    """The error for a batch sent twice without an answer either time."""
    paths = [w.ref.path for w in writes if w.op == "create"]
    return CommitOutcomeUnknown(
        f"Firestore did not say whether the batch committed ({exc}); it creates "
        f"{', '.join(paths)} with {COMMIT_TOKEN_FIELD} {token} if it did",
        paths=paths,
        token=token,
    )


def _read_back(
    db: Client,
    creates: list[Write],
    token: str,
    exc: google_exceptions.GoogleAPIError,
    timeout: float,
) -> dict[str, dict[str, Any]]:
    """The fields of each created document that exists, by path."""
    try:
        refs = [w.ref for w in creates]
        found = db.get_all(refs, retry=bounded_retry(timeout), timeout=timeout)
        return {s.reference.path: s.to_dict() or {} for s in found if s.exists}
    except google_exceptions.GoogleAPIError as read_error:
        unknown = outcome_unknown(creates, token, exc)
        raise CommitOutcomeUnknown(
            f"{unknown}; reading it back failed too ({read_error})",
            paths=unknown.paths,
            token=token,
        ) from exc


def _is_replay(creates: list[Write], snapshots: dict[str, dict[str, Any]]) -> bool:
    """Every guarded create found done before with the same guard value: an idempotent
    repeat. A different value is a conflict; a guarded document missing means the clash
    came from another write."""
    guarded = [w for w in creates if w.idempotency_field]
    found = 0
    for write in guarded:
        stored = snapshots.get(write.ref.path)
        if stored is None:
            continue
        guard = str(write.idempotency_field)
        if stored.get(guard) != write.data.get(guard):
            raise IdempotencyConflict(
                f"{write.ref.path} already exists with a different {guard}: "
                "the idempotency key was reused with different arguments"
            )
        found += 1
    return bool(guarded) and found == len(guarded)


def send(db: Client, writes: Sequence[Write], token: str, settings: Settings) -> Landing:
    """Commit `writes`; when that raises, find out from Firestore what it did. A batch that
    has not landed is sent once more: its creates let it land only once.

    Sends and read-backs share one deadline, FIRESTORE_TIMEOUT_SECONDS; a read-back gets at
    least a quarter of it, so that a send which used it all can still be looked up."""
    deadline = settings.firestore_timeout_seconds
    ends = time.monotonic() + deadline
    batch = build_batch(db, writes)
    for last in (False, True):
        try:
            left = ends - time.monotonic()
            batch.commit(retry=bounded_retry(left), timeout=left)
            return Landing.LANDED
        except google_exceptions.GoogleAPIError as exc:
            read_back = max(ends - time.monotonic(), deadline / 4)
            try:
                landing = after_failed_commit(db, writes, token, exc, timeout=read_back)
            except CommitOutcomeUnknown as unknown:
                raise _unanswered(db, settings, unknown, exc) from exc
            if landing is Landing.LANDED:
                logger.info("the commit had landed although it raised %s", type(exc).__name__)
            if landing is not Landing.NOT_LANDED:
                return landing
            if last or time.monotonic() >= ends:
                sent_twice = outcome_unknown(writes, token, exc)
                raise _unanswered(db, settings, sent_twice, exc) from exc
        logger.warning("a commit got no answer and has not landed: sending it once more")
        batch = build_batch(db, writes)
    raise AssertionError("unreachable")


def _unanswered(
    db: Client, settings: Settings, unknown: CommitOutcomeUnknown, exc: Exception
) -> CommitOutcomeUnknown:
    """`unknown`, saying first which Firestore did not answer in how long, when that is why
    the outcome is unknown."""
    if not isinstance(exc, UNANSWERED):
        return unknown
    settings = replace(settings, emulator_host=emulator_host(db))
    return CommitOutcomeUnknown(
        f"{unanswered(settings, exc)}: {unknown}", paths=unknown.paths, token=unknown.token
    )
