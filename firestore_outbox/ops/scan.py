"""Reading a large result set page by page, and counting one without reading it."""

from __future__ import annotations

import datetime
from collections.abc import Iterator
from typing import Any

from firestore_outbox.firestore.deadline import bounded_retry
from firestore_outbox.partitions import partition_chunks

# Firestore commits at most 500 writes at once; pages of that size feed one write each.
PAGE_SIZE = 500


def pages(
    query: Any, page_size: int = PAGE_SIZE, *, limit: int | None = None
) -> Iterator[list[Any]]:
    """The snapshots of `query` (at most `limit`) in pages, each page resuming after the
    last snapshot read.

    Resuming from a cursor (not from the start) keeps each page one query however the
    caller changes what it has read, and never loads the result set whole.
    """
    cursor = None
    left = limit
    while left is None or left > 0:
        size = page_size if left is None else min(page_size, left)
        page_query = query.limit(size)
        if cursor is not None:
            page_query = page_query.start_after(cursor)
        page = list(page_query.get())
        if page:
            yield page
        if len(page) < size:
            return
        cursor = page[-1]
        if left is not None:
            left -= len(page)


def chunks(partitions: int) -> list[list[int]]:
    """Every partition (the relay's `RELAY_PARTITIONS`) in lists one `partition in` filter
    takes. A command's query that orders or ranges by a timestamp runs once per list, the
    partition its first filter, so that the composite index it needs leads with the
    partition (`firestore.indexes.json`); events without a partition (another producer's,
    not yet healed) are not among its results, and `outbox status` counts them apart."""
    return partition_chunks(partitions)


def count_each(queries: list[Any], *, timeout: float | None = None) -> int:
    """How many documents `queries` match together (each a chunk of partitions), counted at
    one read time."""
    total, read_time = 0, None
    for query in queries:
        counted, read_time = count_at(query, read_time, timeout=timeout)
        total += counted
    return total


def count(query: Any, *, timeout: float | None = None) -> int:
    """How many documents `query` matches: one aggregation, billed one read per 1,000;
    within `timeout` seconds, transient errors retried, when given (else the client's)."""
    return count_at(query, None, timeout=timeout)[0]


def count_at(
    query: Any, read_time: datetime.datetime | None, *, timeout: float | None = None
) -> tuple[int, datetime.datetime]:
    """`count` at `read_time` (None: now), and the read time it counted at: several counts
    at one read time see one consistent snapshot."""
    aggregation = query.count(alias="n")
    if timeout is None:
        [[result]] = aggregation.get(read_time=read_time)
    else:
        retry = bounded_retry(timeout)
        [[result]] = aggregation.get(retry=retry, timeout=timeout, read_time=read_time)
    return int(result.value), result.read_time
