"""A unit of work's queued writes, and the `WriteBatch` they build."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from firestore_outbox.errors import InvalidInput
from firestore_outbox.firestore.limits import REQUEST_ENVELOPE_BYTES, document_size
from firestore_outbox.firestore.raw import encoded_writes

if TYPE_CHECKING:
    from google.cloud.firestore import Client, DocumentReference, WriteBatch


@dataclass(frozen=True)
class Write:
    """One queued write of a unit of work."""

    op: str
    ref: DocumentReference
    # A shallow copy: deep-copying would clone sentinels such as SERVER_TIMESTAMP, which the
    # client recognises by identity.
    data: dict[str, Any] = field(default_factory=dict)
    merge: bool = False
    idempotency_field: str | None = None
    # For an update: applied only if the document was last updated at this time.
    last_update_time: datetime.datetime | None = None

    def apply(self, batch: WriteBatch) -> None:
        if self.op == "create":
            batch.create(self.ref, self.data)
        elif self.op == "set":
            batch.set(self.ref, self.data, merge=self.merge)
        elif self.op == "update":
            option = None
            if self.last_update_time is not None:
                from google.cloud.firestore import Client

                option = Client.write_option(last_update_time=self.last_update_time)
            batch.update(self.ref, self.data, option=option)
        else:
            batch.delete(self.ref)


def build_batch(db: Client, writes: Sequence[Write]) -> WriteBatch:
    """A batch holding `writes`; `InvalidInput` if the client refuses to encode one."""
    batch = db.batch()
    for write in writes:
        try:
            write.apply(batch)
        except (ValueError, TypeError) as exc:  # the client refused to encode the data
            raise InvalidInput(f"cannot write {write.ref.path}: {exc}") from exc
    return batch


def request_size(batch: Any, writes: Sequence[Write]) -> int:
    """Bytes the commit will send: the encoded writes the client built, plus the envelope."""
    encoded = encoded_writes(batch)
    if encoded is None:  # an in-memory fake: estimate with the storage-size formula
        return sum(document_size(w.ref.path, w.data) for w in writes)
    return REQUEST_ENVELOPE_BYTES + sum(int(type(pb).pb(pb).ByteSize()) for pb in encoded)
