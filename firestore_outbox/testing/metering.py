"""`meter(db)`: count the Firestore operations a client really sends and receives.

Firestore bills per document read and per document write, so the relay's cost is measured
where the bill is made: on the wire. A gRPC interceptor on the client's channel counts the
documents each response carries (query results, document gets, listener changes) and the
writes each request carries (`Commit`, `BatchWrite`), whatever the code above it believes it
does. Used by the benchmark and by the tests that pin the relay's cost per event.

Aggregations (`RunAggregationQuery`: COUNT, SUM, AVG) return no documents, but Firestore bills
one read per up to 1,000 index entries they match, at least one per query. The meter cannot
see the index entries; it takes the largest COUNT in the result as their number (exact for a
COUNT, which matches one entry per document) and bills a SUM or AVG without a COUNT as one
read: right for the small collections of the tests and the benchmark (the relay's two COUNTs
each cost one read under 1,000 `PENDING` events), an undercount for a SUM over more.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterator
from math import ceil
from typing import TYPE_CHECKING, Any

import grpc

from firestore_outbox.firestore.raw import intercept

if TYPE_CHECKING:
    from google.cloud.firestore import Client


class OperationMeter:
    """Counts by name: `reads` (documents received), `writes` (document writes sent),
    `emptyQueries` (queries that returned nothing; Firestore bills each as one read),
    `aggregationReads` (the reads aggregation queries are billed, see the module) and one
    `rpc:<Method>` per call; `reads_by_method()`, the documents each kind of call received."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._reads_by: Counter[str] = Counter()

    def add(self, **counts: int) -> None:
        with self._lock:
            self._counts.update(counts)

    def add_reads(self, method: str, documents: int) -> None:
        """`documents` received by a call of `method` (the benchmark names each read)."""
        with self._lock:
            self._reads_by[method] += documents

    def reads_by_method(self) -> dict[str, int]:
        """Documents received, by the gRPC method that received them (`RunQuery`, ...)."""
        with self._lock:
            return dict(self._reads_by)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        with self._lock:
            self._counts.clear()
            self._reads_by.clear()

    @property
    def reads(self) -> int:
        return self.snapshot().get("reads", 0)

    @property
    def writes(self) -> int:
        return self.snapshot().get("writes", 0)

    @property
    def billed_reads(self) -> int:
        """Reads as billed: documents, one for each empty query, and the aggregations'."""
        counts = self.snapshot()
        return sum(counts.get(name, 0) for name in ("reads", "emptyQueries", "aggregationReads"))


def meter(db: Client) -> OperationMeter:
    """Count every operation `db` makes from now on. Call before `db`'s first request."""
    counter = OperationMeter()
    intercept(db, _Interceptor(counter))
    return counter


def _method(details: grpc.ClientCallDetails) -> str:
    name = details.method
    text = name.decode() if isinstance(name, bytes) else str(name)
    return text.rsplit("/", 1)[-1]


def _documents_in(method: str, response: Any) -> int:
    # On the raw protobuf: proto-plus attribute access cost the benchmark's relays about 5%
    # of their CPU, counted as theirs.
    raw = type(response).pb(response) if hasattr(type(response), "pb") else response
    if method == "RunQuery":
        return 1 if raw.HasField("document") else 0
    if method == "BatchGetDocuments":  # a missing document is billed as a read too
        return 1 if raw.HasField("found") or raw.missing else 0
    if method == "Listen":  # a document leaving a listener's results is not billed
        return 1 if raw.document_change.target_ids else 0
    if method == "GetDocument":
        return 1
    return 0


def _count_aliases(method: str, request: Any) -> frozenset[str]:
    if method != "RunAggregationQuery":
        return frozenset()
    raw = type(request).pb(request) if hasattr(type(request), "pb") else request
    aggregations = raw.structured_aggregation_query.aggregations
    return frozenset(a.alias for a in aggregations if a.HasField("count"))


def _largest_count(response: Any, aliases: frozenset[str]) -> int:
    raw = type(response).pb(response)
    fields = raw.result.aggregate_fields
    return max((fields[a].integer_value for a in aliases if a in fields), default=0)


class _CountingStream:
    """A response stream that counts documents as they arrive; everything else delegates."""

    def __init__(
        self,
        call: Any,
        method: str,
        counter: OperationMeter,
        count_aliases: frozenset[str] = frozenset(),
    ) -> None:
        self._call = call
        self._count_aliases = count_aliases
        self._method = method
        self._counter = counter
        self._documents = 0
        self._matched = 0  # an aggregation's largest count: the index entries it matched

    def __iter__(self) -> _CountingStream:
        return self

    def __next__(self) -> Any:
        try:
            response = next(self._call)
        except StopIteration:
            if self._method == "RunQuery" and not self._documents:
                self._counter.add(emptyQueries=1)
            if self._method == "RunAggregationQuery":
                self._counter.add(aggregationReads=max(1, ceil(self._matched / 1000)))
            raise
        if self._method == "RunAggregationQuery":
            self._matched = max(self._matched, _largest_count(response, self._count_aliases))
        documents = _documents_in(self._method, response)
        if documents:
            self._documents += documents
            self._counter.add(reads=documents)
            self._counter.add_reads(self._method, documents)
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self._call, name)


# grpc ships no type hints, hence the ignores.
class _Interceptor(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
    grpc.StreamStreamClientInterceptor,  # type: ignore[misc]
):
    def __init__(self, counter: OperationMeter) -> None:
        self._counter = counter

    def _count_request(self, method: str, request: Any) -> None:
        writes = len(request.writes) if method in ("Commit", "BatchWrite") else 0
        self._counter.add(**{f"rpc:{method}": 1, "writes": writes})

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: grpc.ClientCallDetails, request: Any
    ) -> Any:
        method = _method(details)
        self._count_request(method, request)
        call = continuation(details, request)
        if method == "GetDocument" and call.exception() is None:
            self._counter.add(reads=1)
            self._counter.add_reads(method, 1)
        return call

    def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: grpc.ClientCallDetails, request: Any
    ) -> Any:
        method = _method(details)
        self._count_request(method, request)
        call = continuation(details, request)
        return _CountingStream(call, method, self._counter, _count_aliases(method, request))

    def intercept_stream_stream(
        self,
        continuation: Callable[..., Any],
        details: grpc.ClientCallDetails,
        request_iterator: Iterator[Any],
    ) -> Any:
        method = _method(details)
        self._counter.add(**{f"rpc:{method}": 1})
        return _CountingStream(continuation(details, request_iterator), method, self._counter)
