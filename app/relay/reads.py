"""The relay's queries, read straight off the wire.

`Query.get()` builds a `DocumentSnapshot` per result, and on the way the document's data is
deep-copied twice (once by the snapshot, once by `to_dict()`) after passing through proto-plus
wrappers: with the writes encoded directly (`app.relay.writes`), that made reading a due event
the relay's largest CPU cost. Here each result is decoded once from the raw protobuf by the
client's own decoder into a `Found`, which offers what the relay uses of a snapshot.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud.firestore_v1 import _helpers
from google.cloud.firestore_v1.types import firestore

if TYPE_CHECKING:
    from google.api_core.retry import Retry
    from google.cloud.firestore import Client, DocumentReference, Query


class DueDocument(Protocol):
    """What the relay needs of a document it may lease: a `Found` or a `DocumentSnapshot`."""

    @property
    def id(self) -> str: ...

    @property
    def reference(self) -> DocumentReference: ...

    @property
    def update_time(self) -> datetime.datetime: ...

    def to_dict(self) -> dict[str, Any] | None: ...

    def get(self, field_path: str) -> Any: ...


@dataclass(frozen=True)
class Found:
    """One query result. `to_dict()` returns the decoded data itself, not a copy."""

    reference: DocumentReference
    update_time: datetime.datetime
    data: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.reference.id)

    def to_dict(self) -> dict[str, Any]:
        return self.data

    def get(self, field_path: str) -> Any:
        return self.data.get(field_path)


def run_query(db: Client, query: Query, *, retry: Retry, timeout: float) -> list[Found]:
    """The documents `query` (on a collection) returns, in order."""
    collection = query._parent
    parent, prefix = collection._parent_info()
    responses = db._firestore_api.run_query(
        request={"parent": parent, "structured_query": query._to_protobuf()},
        metadata=db._rpc_metadata,
        retry=retry,
        timeout=timeout,
    )
    found = []
    for response in responses:
        raw = firestore.RunQueryResponse.pb(response)
        if not raw.HasField("document"):
            continue
        document = raw.document
        data = _helpers.decode_dict(document.fields, db)
        found.append(
            Found(
                reference=collection.document(document.name[len(prefix) + 1 :]),
                update_time=DatetimeWithNanoseconds.from_timestamp_pb(  # type: ignore[no-untyped-call]
                    document.update_time
                ),
                # A document shaped like an encoded vector decodes as one: poison, then.
                data=data if isinstance(data, dict) else {},
            )
        )
    return found
