"""Compare-and-set on a document's update time: the one primitive the relay and the inbox use.

A writer reads a document (its update time T0) and writes with the precondition "last
updated at T0". Whoever writes first moves the document to T1; every other writer holding
T0 loses the race. The writes go out in one `BatchWrite`, which applies each write on its own,
and each write's outcome comes back as a value:

- `APPLIED` with the new update time (Firestore's commit time: the writer's "now");
- `LOST`: the document changed since it was read, or is gone; `uncertain` when the call went
  out more than once, so the change may have been this writer's own first send (`landed` reads
  the documents back to tell);
- `REFUSED` with Firestore's reason: the write itself is not acceptable (a document pushed
  over 1 MiB, an invalid value) or failed on its own (`transient`, worth another try).

So one bad write never hides which of the others were applied. Only a failure of the whole
call (Firestore unreachable after the retries) raises `GoogleAPIError`.
"""

from __future__ import annotations

import datetime
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from google.rpc import code_pb2

from firestore_outbox.firestore.raw import batch_write, is_transform, update_pb

if TYPE_CHECKING:
    from google.api_core.retry import Retry
    from google.cloud.firestore import Client, DocumentReference

# The precondition failed (someone else wrote first) or the document is gone (purged).
_LOST = frozenset({code_pb2.FAILED_PRECONDITION, code_pb2.NOT_FOUND})
# Failures of a write that say nothing about the write itself.
TRANSIENT_CODES = frozenset(
    {
        code_pb2.ABORTED,
        code_pb2.UNAVAILABLE,
        code_pb2.DEADLINE_EXCEEDED,
        code_pb2.INTERNAL,
        code_pb2.RESOURCE_EXHAUSTED,
        code_pb2.CANCELLED,
        code_pb2.UNKNOWN,
    }
)


@dataclass(frozen=True)
class Change:
    """Write `fields` to `ref` (delete it when `fields` is None) only if it was last updated
    at `expected_update_time`."""

    ref: DocumentReference
    expected_update_time: datetime.datetime
    fields: Mapping[str, Any] | None


class WriteOutcome(enum.Enum):
    APPLIED = "applied"
    LOST = "lost"
    REFUSED = "refused"


@dataclass(frozen=True)
class Written:
    """How one compare-and-set ended. `update_time` is the document's new update time when
    applied (for a delete, the one it had). `reason` and `code` say why a write was refused."""

    outcome: WriteOutcome
    update_time: datetime.datetime | None = None
    reason: str = ""
    code: int = code_pb2.OK
    uncertain: bool = False  # LOST after a resend: perhaps to this very write's first send

    @property
    def applied(self) -> bool:
        return self.outcome is WriteOutcome.APPLIED

    @property
    def transient(self) -> bool:
        """Refused for a reason unrelated to the write: the same write may pass later."""
        return self.outcome is WriteOutcome.REFUSED and self.code in TRANSIENT_CODES


def write_if_unchanged(
    db: Client, changes: Sequence[Change], *, retry: Retry, timeout: float
) -> list[Written]:
    """Apply each change on its own, in one `BatchWrite`; one outcome per change, in order.

    A call retried after its answer was lost finds its own earlier writes and reports them as
    `LOST` and `uncertain`: a caller that must know reads them back with `landed`; either way
    a state change is never doubled.
    """
    if not changes:
        return []
    sent = batch_write(
        db,
        [update_pb(c.ref, c.fields, c.expected_update_time) for c in changes],
        retry=retry,
        timeout=timeout,
    )
    results = []
    for change, (code, message, update_time) in zip(changes, sent.answers, strict=True):
        if code == code_pb2.OK:
            results.append(
                Written(WriteOutcome.APPLIED, update_time or change.expected_update_time)
            )
        elif code in _LOST:
            results.append(Written(WriteOutcome.LOST, uncertain=sent.sends > 1))
        else:
            name = code_pb2.Code.Name(code) if code in code_pb2.Code.values() else str(code)
            results.append(Written(WriteOutcome.REFUSED, reason=f"{name}: {message}", code=code))
    return results


def landed(
    db: Client,
    changes: Sequence[Change],
    *,
    holding: Mapping[str, Any],
    retry: Retry,
    timeout: float,
) -> list[datetime.datetime | None]:
    """Which of `changes` (writes of fields that came back `LOST` with an uncertain outcome)
    are in Firestore as this writer wrote them: one batched get; per change the document's
    update time if it was updated after `expected_update_time` and holds every plain value
    the change wrote (server timestamps and transforms are not compared) and those in
    `holding` (what names the writer), else None. A delete is never confirmed."""
    if not changes:
        return []
    snapshots = {
        snapshot.reference.path: snapshot
        for snapshot in db.get_all([c.ref for c in changes], retry=retry, timeout=timeout)
    }
    confirmed: list[datetime.datetime | None] = []
    for change in changes:
        snapshot = snapshots.get(change.ref.path)
        data = snapshot.to_dict() if snapshot is not None and snapshot.exists else None
        if snapshot is None or data is None or change.fields is None:
            confirmed.append(None)
            continue
        expected = {n: v for n, v in change.fields.items() if not is_transform(v)}
        ours = snapshot.update_time > change.expected_update_time and all(
            name in data and data[name] == value for name, value in {**expected, **holding}.items()
        )
        confirmed.append(snapshot.update_time if ours else None)
    return confirmed
