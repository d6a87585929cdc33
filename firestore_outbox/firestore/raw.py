"""The one module that reaches into the Firestore client's private internals, for speed.

The relay writes two small updates per event (lease, settle) and reads each due event once.
Through the public API each write costs a few hundred microseconds of proto-plus wrapping and
each query result is deep-copied twice (by the snapshot, then by `to_dict()`), which made
encoding and decoding the relay's largest CPU costs. Here writes are encoded straight to
protobuf (same update mask, server-timestamp transforms and update-time precondition) and
query results decoded once by the client's own decoder.

Every private name used is listed in `PINNED`; `tests/unit/test_firestore_raw.py` checks that
each still exists, so a client upgrade that moves one fails that test with a clear message
instead of failing the relay at run time.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud.firestore import SERVER_TIMESTAMP
from google.cloud.firestore_v1 import _helpers, base_client, base_collection, base_query, document
from google.cloud.firestore_v1 import client as _client
from google.cloud.firestore_v1 import transforms as _transforms
from google.cloud.firestore_v1.types import common, firestore, write
from google.cloud.firestore_v1.types import document as document_types
from google.protobuf import timestamp_pb2

if TYPE_CHECKING:
    from google.api_core.retry import Retry
    from google.cloud.firestore import Client, DocumentReference, Query

# (owner, private attribute) pairs this module relies on: pinned by a unit test. Besides
# these, a query's `_parent` (its collection) is set in `__init__`, so the test pins it on an
# instance.
PINNED: tuple[tuple[Any, str], ...] = (
    (_helpers, "decode_dict"),
    (_helpers, "encode_value"),
    (_helpers, "pbs_for_update"),
    (_transforms, "_NumericValue"),
    (_transforms, "_ValueList"),
    (_client.Client, "_firestore_api"),
    (
        base_client.BaseClient,
        "_firestore_api_internal",
    ),  # firestore_outbox.firestore.client.close_clients
    (base_client.BaseClient, "_database_string"),
    (base_client.BaseClient, "_rpc_metadata"),
    (document.DocumentReference, "_document_path"),
    (base_query.BaseQuery, "_to_protobuf"),
    (base_collection.BaseCollectionReference, "_parent_info"),
)

_Write = write.Write.pb()
_Document = document_types.Document.pb()
_Value = document_types.Value.pb()
_Mask = common.DocumentMask.pb()
_Precondition = common.Precondition.pb()
_Transform = write.DocumentTransform.FieldTransform.pb()
_REQUEST_TIME = write.DocumentTransform.FieldTransform.ServerValue.REQUEST_TIME
_Transforms = (_transforms._NumericValue, _transforms._ValueList)  # Increment, ArrayUnion...


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


@dataclass(frozen=True)
class QueryResult:
    """The documents a query returned, in order, and its read time on Firestore's clock."""

    found: list[Found]
    read_time: datetime.datetime | None


def run_query(db: Client, query: Query, *, retry: Retry, timeout: float) -> QueryResult:
    """Run `query` (on a collection) and decode each result once."""
    collection = query._parent
    parent, prefix = collection._parent_info()
    responses = db._firestore_api.run_query(
        request={"parent": parent, "structured_query": query._to_protobuf()},
        metadata=db._rpc_metadata,
        retry=retry,
        timeout=timeout,
    )
    found, read_time = [], None
    for response in responses:
        raw = firestore.RunQueryResponse.pb(response)
        if raw.HasField("read_time"):
            read_time = _datetime(raw.read_time)
        if not raw.HasField("document"):
            continue
        data = _helpers.decode_dict(raw.document.fields, db)
        found.append(
            Found(
                reference=collection.document(raw.document.name[len(prefix) + 1 :]),
                update_time=_datetime(raw.document.update_time),
                # A document shaped like an encoded vector decodes as one: poison, then.
                data=data if isinstance(data, dict) else {},
            )
        )
    return QueryResult(found, read_time)


def update_pb(
    ref: DocumentReference,
    fields: Mapping[str, Any] | None,
    expected_update_time: datetime.datetime,
) -> Any:
    """`ref.update(fields)` (or `ref.delete()` when `fields` is None) if the document was
    last updated at `expected_update_time`; top-level field names only."""
    precondition = _Precondition(update_time=_timestamp(expected_update_time))
    if fields is None:
        return _Write(delete=ref._document_path, current_document=precondition)
    if any(is_transform(value) and value is not SERVER_TIMESTAMP for value in fields.values()):
        # Field deletes and other transforms (rare: `outbox requeue`): the client's encoder.
        option = ref._client.write_option(last_update_time=expected_update_time)
        [write_pb] = _helpers.pbs_for_update(ref._document_path, dict(fields), option)
        return write.Write.pb(write_pb)
    values, transforms = {}, []
    for name, value in fields.items():
        if value is SERVER_TIMESTAMP:
            transforms.append(_Transform(field_path=name, set_to_server_value=_REQUEST_TIME))
        else:
            values[name] = _value(value)
    return _Write(
        update=_Document(name=ref._document_path, fields=values),
        update_mask=_Mask(field_paths=list(values)),
        update_transforms=transforms,
        current_document=precondition,
    )


@dataclass(frozen=True)
class BatchWritten:
    """Per write its status code, status message and new update time; and how many times
    the request went out (more than once when the retry layer sent it again after an error,
    which may have come after the first one landed)."""

    answers: list[tuple[int, str, datetime.datetime | None]]
    sends: int


def batch_write(db: Client, writes: Sequence[Any], *, retry: Retry, timeout: float) -> BatchWritten:
    """Send `writes` in one `BatchWrite` (each applied on its own)."""
    request = firestore.BatchWriteRequest.pb()(database=db._database_string, writes=writes)
    sends = 0

    def counted(send: Callable[..., Any]) -> Callable[..., Any]:
        # The client applies `retry` as a decorator around each send: count them under it.
        def once(*args: Any, **kwargs: Any) -> Any:
            nonlocal sends
            sends += 1
            return send(*args, **kwargs)

        return retry(once)

    response = db._firestore_api.batch_write(
        request=firestore.BatchWriteRequest.wrap(request),
        metadata=db._rpc_metadata,
        retry=counted,
        timeout=timeout,
    )
    raw = firestore.BatchWriteResponse.pb(response)
    answers = [
        (
            status.code,
            status.message,
            _datetime(result.update_time) if result.HasField("update_time") else None,
        )
        for status, result in zip(raw.status, raw.write_results, strict=True)
    ]
    return BatchWritten(answers, sends)


def _datetime(stamp: timestamp_pb2.Timestamp) -> datetime.datetime:
    return DatetimeWithNanoseconds.from_timestamp_pb(stamp)  # type: ignore[no-untyped-call,no-any-return]


def is_transform(value: Any) -> bool:
    """A value Firestore computes (a server timestamp, a field delete, an increment...)."""
    return isinstance(value, (_transforms.Sentinel, *_Transforms))


def _value(value: Any) -> Any:
    if value is None:
        return _Value(null_value=0)
    if isinstance(value, bool):
        return _Value(boolean_value=value)
    if isinstance(value, int):
        return _Value(integer_value=value)
    if isinstance(value, str):
        return _Value(string_value=value)
    if isinstance(value, datetime.datetime):
        return _Value(timestamp_value=_timestamp(value))
    return document_types.Value.pb(_helpers.encode_value(value))


def _timestamp(moment: datetime.datetime) -> timestamp_pb2.Timestamp:
    if isinstance(moment, DatetimeWithNanoseconds):
        return moment.timestamp_pb()  # type: ignore[no-untyped-call]
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(moment)
    return stamp
