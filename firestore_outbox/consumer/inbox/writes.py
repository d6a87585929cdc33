"""The inbox record's conditional writes: a compare-and-set on its update time (the relay's
primitive, `firestore_outbox.firestore.cas`), and a failed run recorded unless another delivery
settled it first."""

from __future__ import annotations

import contextlib
import datetime
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.api_core.retry import Retry

from firestore_outbox.consumer.inbox.records import Records
from firestore_outbox.firestore import cas

if TYPE_CHECKING:
    from google.cloud.firestore import Client, DocumentReference


def write_if_unchanged(
    db: Client,
    ref: DocumentReference,
    update_time: datetime.datetime,
    fields: dict[str, Any],
    *,
    timeout: float,
) -> datetime.datetime | None:
    """The new update time, or None when another delivery changed the record first; a write
    Firestore refuses raises, as an effect's caller must hear of it."""
    [written] = cas.write_if_unchanged(
        db,
        [cas.Change(ref, update_time, fields)],
        retry=Retry(initial=0.1, maximum=1.0, timeout=timeout),
        timeout=timeout,
    )
    if written.outcome is cas.WriteOutcome.REFUSED:
        raise google_exceptions.from_grpc_status(  # type: ignore[no-untyped-call]
            written.code, f"writing {ref.path}: {written.reason}"
        )
    return written.update_time


def record_failure(
    db: Client,
    ref: DocumentReference,
    records: Records,
    key: tuple[str, str],
    exc: Exception,
    *,
    timeout: float,
) -> None:
    """Count a failed run of the transactional or batch path (FAILED, or PARKED at the
    bound), unless another delivery has settled the record since."""
    snapshot = ref.get(timeout=timeout)
    if records.blocked(snapshot) is not None:
        return
    source, event_id = key
    attempts = records.next_attempt(snapshot)
    fields = records.leased(source, event_id, attempts, new=not snapshot.exists)
    fields.update(records.failed(attempts, exc))
    if snapshot.exists:
        write_if_unchanged(db, ref, snapshot.update_time, fields, timeout=timeout)
        return
    with contextlib.suppress(google_exceptions.Conflict):  # a concurrent delivery won
        ref.create(fields, timeout=timeout)
