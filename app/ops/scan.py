"""Reading a large result set page by page, and counting one without reading it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

# Firestore commits at most 500 writes at once; pages of that size feed one write each.
PAGE_SIZE = 500


def pages(query: Any, page_size: int = PAGE_SIZE) -> Iterator[list[Any]]:
    """The snapshots of `query` in pages, each page resuming after the last snapshot read.

    Resuming from a cursor (not from the start) keeps each page one query however the
    caller changes what it has read, and never loads the result set whole.
    """
    cursor = None
    while True:
        page_query = query.limit(page_size)
        if cursor is not None:
            page_query = page_query.start_after(cursor)
        page = list(page_query.get())
        if page:
            yield page
        if len(page) < page_size:
            return
        cursor = page[-1]


def count(query: Any) -> int:
    """How many documents `query` matches: one aggregation, billed one read per 1,000."""
    [[result]] = query.count(alias="n").get()
    return int(result.value)
