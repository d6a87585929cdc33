"""The one module that reaches into google-cloud-firestore's private internals.

Everywhere else the library uses the client's public API. Here, and only here:

- writes encoded straight to protobuf and query results decoded once, for speed (below);
- the client's plumbing that has no public handle: which emulator it talks to, its GAPIC
  client once made (to close its channel), its precomputed method wrappers (to give every
  call one deadline), a batch's encoded writes (to measure a commit before sending it), and
  its channel (for the test and benchmark wire meter);
- the two places follow mode reaches inside `Watch` (a listener), at the end.

Why the writes and reads: the relay writes one or two small updates per event (lease, settle)
and reads each due event once. Through the public API each write is wrapped in proto-plus and
each query result is deep-copied twice (by the snapshot, then by `to_dict()`). Here writes are
encoded straight to protobuf (same update mask, server-timestamp transforms and update-time
precondition) and query results decoded once by the client's own decoder; what that saves is
measured by `bench/firestore_raw.py` (docs/performance.md). What they return is in
`firestore_outbox.firestore.results`.

Every private name used on a class or module is listed in `PINNED`; those set on instances
are pinned on real instances. `tests/unit/firestore/test_firestore_raw.py` checks them all, so a
client upgrade that moves one fails that test with a clear message instead of failing the relay
at run time.
"""

from __future__ import annotations

import datetime
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import grpc
from google.api_core import exceptions as google_exceptions
from google.api_core.datetime_helpers import DatetimeWithNanoseconds
from google.cloud.firestore import SERVER_TIMESTAMP
from google.cloud.firestore_v1 import _helpers, base_client, base_collection, base_query, document
from google.cloud.firestore_v1 import client as _client
from google.cloud.firestore_v1 import transforms as _transforms
from google.cloud.firestore_v1 import watch as watch_module
from google.cloud.firestore_v1.types import common, firestore, write
from google.cloud.firestore_v1.types import document as document_types
from google.protobuf import timestamp_pb2

from firestore_outbox.firestore.results import BatchWritten, QueryResult

# Re-exported: the relay's modules import them here.
from firestore_outbox.firestore.results import DueDocument as DueDocument
from firestore_outbox.firestore.results import Found as Found

if TYPE_CHECKING:
    from google.api_core.retry import Retry
    from google.cloud.firestore import Client, DocumentReference, Query, Watch

# (owner, private attribute) pairs this module relies on: pinned by a unit test. Besides
# these, attributes set in `__init__` are pinned on instances: a query's `_parent`, a client's
# `_emulator_host`, `_client_options` and its transport's `_wrapped_methods`,
# a batch's `_write_pbs`, a watch's `_rpc` and its `_reopen_throttle`.
PINNED: tuple[tuple[Any, str], ...] = (
    (_helpers, "decode_dict"),
    (_helpers, "encode_value"),
    (_helpers, "pbs_for_update"),
    (_transforms, "_NumericValue"),
    (_transforms, "_ValueList"),
    (_client.Client, "_firestore_api"),
    (base_client.BaseClient, "_firestore_api_internal"),
    (base_client.BaseClient, "_database_string"),
    (base_client.BaseClient, "_target"),
    (watch_module, "_RPC_ERROR_THREAD_NAME"),
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


def run_query(db: Client, query: Query, *, retry: Retry, timeout: float) -> QueryResult:
    """Run `query` (on a collection) and decode each result once."""
    collection = query._parent  # private: decoded once, not copied twice (bench/firestore_raw.py)
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
        data = _helpers.decode_dict(raw.document.fields, db)  # the client's own decoder, once
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
        # private: encoded straight to protobuf, no proto-plus (bench/firestore_raw.py)
        return _Write(delete=ref._document_path, current_document=precondition)
    if any(is_transform(value) and value is not SERVER_TIMESTAMP for value in fields.values()):
        # Field deletes and other transforms (rare: `outbox requeue`): the client's encoder.
        option = _client.Client.write_option(last_update_time=expected_update_time)
        [write_pb] = _helpers.pbs_for_update(ref._document_path, dict(fields), option)  # rare
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


def batch_write(db: Client, writes: Sequence[Any], *, retry: Retry, timeout: float) -> BatchWritten:
    """Send `writes` in one `BatchWrite` (each applied on its own)."""
    # private: the public BulkWriter answers through callbacks and retries on its own; the relay
    # needs each write's status and how many times the request went out (a resend may land twice)
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


# --- The client's plumbing -------------------------------------------------------------------


def emulator_host(db: Any) -> str | None:
    """The emulator `db` talks to; None for the real service (or an in-memory fake)."""
    return getattr(db, "_emulator_host", None)  # private: the client has no public getter


def point_at_emulator(client: Client, host: str) -> None:
    """Make `client` talk to the emulator at `host`. The client reads FIRESTORE_EMULATOR_HOST
    from `os.environ` only; settings may come from `.env` or from the caller."""
    client._emulator_host = host  # private: the public way is os.environ, the whole process's


def gapic_if_made(client: Client) -> Any:
    """The client's GAPIC client (whose `transport` holds the channel), or None before its
    first call."""
    return client._firestore_api_internal  # private: the sync client has no close() (2.22, 2.34)


def rewrap_methods(db: Client, wrap: Callable[[Any], Any]) -> None:
    """Replace the client's precomputed GAPIC method wrappers with `wrap(method)` each: the
    only way to give every call (queries, aggregations, iterators) one default deadline."""
    # private: the public API takes retry/timeout per call only, and iterators and
    # aggregations made deep inside the relay and commands would each need them passed
    transport = db._firestore_api._transport
    transport._wrapped_methods = {method: wrap(method) for method in transport._wrapped_methods}


def encoded_writes(batch: Any) -> list[Any] | None:
    """The protobuf writes a `WriteBatch` will send; None for an in-memory fake."""
    return getattr(batch, "_write_pbs", None)  # private: a batch shows no size before commit


def intercept(db: Client, interceptor: Any) -> None:
    """Put a gRPC client `interceptor` on `db`'s channel. Call before `db`'s first request
    (and before `with_deadline`, whose wrappers a new transport would drop)."""
    from google.cloud.firestore_v1.services.firestore import client as gapic
    from google.cloud.firestore_v1.services.firestore.transports.grpc import (
        FirestoreGrpcTransport,
    )

    # private: the client takes no channel, transport or interceptor of the caller's
    if db._firestore_api_internal is not None:
        raise RuntimeError("intercept(db) must come before the client's first request")
    # The client's own channel (its options, the emulator's or the service's credentials),
    # wrapped: the client takes no channel or interceptor of the caller's.
    channel = grpc.intercept_channel(db._firestore_api.transport.grpc_channel, interceptor)
    db._transport = FirestoreGrpcTransport(host=db._target, channel=channel)
    db._firestore_api_internal = gapic.FirestoreClient(
        transport=db._transport, client_options=db._client_options
    )


# --- Inside `Watch` --------------------------------------------------------------------------
# The two places follow mode reaches inside google-cloud-firestore's `Watch` (a listener), pinned
# by `tests/unit/firestore/test_watch_internals.py`:
#
# - `Watch` raises a stream's last error in a thread of its own, named `FAILURE_THREAD`, which
#   `firestore_outbox.firestore.watch_failures` routes to the listeners running;
# - `Watch` re-opens a stream that failed with a "recoverable" error (UNAVAILABLE among them)
#   at once and forever: with Firestore unreachable, that loop burns a whole CPU core.
#   `give_up_when_reconnecting_in_a_loop(watch)` lets it re-open a few times (a server closing
#   a long-lived stream is normal) and ends it with `ServiceUnavailable` when it keeps failing,
#   so the listener is reported down and `Listener` takes over with its own backoff.

# `Watch` names the thread it raises a stream's last error on; no public name says which.
FAILURE_THREAD: str = watch_module._RPC_ERROR_THREAD_NAME
# More re-opens than this within the window means the stream is not coming back by itself.
REOPENS_ALLOWED = 3
REOPEN_WINDOW_SECONDS = 10.0


class _GiveUpInALoop:
    """The `ResumableBidiRpc` re-open throttle slot: entered before each re-open; raising
    ends the stream with that error (the RPC finalizes and the Watch closes)."""

    def __init__(self) -> None:
        self._reopens: deque[float] = deque()

    def __enter__(self) -> None:
        now = time.monotonic()
        while self._reopens and self._reopens[0] < now - REOPEN_WINDOW_SECONDS:
            self._reopens.popleft()
        if len(self._reopens) >= REOPENS_ALLOWED:
            raise google_exceptions.ServiceUnavailable(  # type: ignore[no-untyped-call]
                f"listener stream failed {REOPENS_ALLOWED + 1} times within "
                f"{REOPEN_WINDOW_SECONDS:g}s: Firestore unreachable"
            )
        self._reopens.append(now)

    def __exit__(self, *_: object) -> None:
        return None


def give_up_when_reconnecting_in_a_loop(watch: Watch) -> None:
    """Make `watch` end with `ServiceUnavailable` instead of re-opening in a tight loop."""
    rpc = getattr(watch, "_rpc", None)
    if rpc is not None:  # None: the watch already closed, nothing left to pace
        rpc._reopen_throttle = _GiveUpInALoop()  # private: Watch re-opens at once, for ever
