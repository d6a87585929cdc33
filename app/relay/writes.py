"""Conditional updates sent as one `BatchWrite`, encoded straight to protobuf.

The relay writes two small updates per event (lease, settle). Built through `WriteBatch.update`
each one costs a few hundred microseconds of proto-plus wrapping, which made encoding the
relay's largest CPU cost; the raw messages below carry exactly the same writes (update mask,
server-timestamp transforms, update-time precondition) for a fraction of it.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud.firestore import SERVER_TIMESTAMP
from google.cloud.firestore_v1 import _helpers
from google.cloud.firestore_v1.transforms import Sentinel, _NumericValue, _ValueList
from google.cloud.firestore_v1.types import common, document, firestore, write
from google.protobuf import timestamp_pb2

if TYPE_CHECKING:
    from google.api_core.retry import Retry
    from google.cloud.firestore import Client, DocumentReference

_Write = write.Write.pb()
_Document = document.Document.pb()
_Value = document.Value.pb()
_Mask = common.DocumentMask.pb()
_Precondition = common.Precondition.pb()
_Transform = write.DocumentTransform.FieldTransform.pb()
_REQUEST_TIME = write.DocumentTransform.FieldTransform.ServerValue.REQUEST_TIME
_Transforms = (_NumericValue, _ValueList)  # Increment, Maximum, Minimum, ArrayUnion/Remove


def update_pb(
    ref: DocumentReference,
    fields: Mapping[str, Any] | None,
    expected_update_time: datetime.datetime,
) -> Any:
    """`ref.update(fields)` (or `ref.delete()` when `fields` is None) if the document was
    last updated at `expected_update_time`; top-level field names only (all the relay
    writes)."""
    precondition = _Precondition(update_time=_timestamp(expected_update_time))
    if fields is None:
        return _Write(delete=ref._document_path, current_document=precondition)
    if any(_special(value) and value is not SERVER_TIMESTAMP for value in fields.values()):
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


def batch_write(
    db: Client, writes: Sequence[Any], *, retry: Retry, timeout: float
) -> list[tuple[int, str, datetime.datetime | None]]:
    """Send `writes` in one `BatchWrite` (each applied on its own); per write its status
    code, status message and new update time."""
    request = firestore.BatchWriteRequest.pb()(database=db._database_string, writes=writes)
    response = db._firestore_api.batch_write(
        request=firestore.BatchWriteRequest.wrap(request),
        metadata=db._rpc_metadata,
        retry=retry,
        timeout=timeout,
    )
    raw = firestore.BatchWriteResponse.pb(response)
    return [
        (
            status.code,
            status.message,
            DatetimeWithNanoseconds.from_timestamp_pb(result.update_time)  # type: ignore[no-untyped-call]
            if result.HasField("update_time")
            else None,
        )
        for status, result in zip(raw.status, raw.write_results, strict=True)
    ]


def _special(value: Any) -> bool:
    return isinstance(value, (Sentinel, *_Transforms))


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
    return document.Value.pb(_helpers.encode_value(value))


def _timestamp(moment: datetime.datetime) -> timestamp_pb2.Timestamp:
    if isinstance(moment, DatetimeWithNanoseconds):
        return moment.timestamp_pb()  # type: ignore[no-untyped-call]
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(moment)
    return stamp
