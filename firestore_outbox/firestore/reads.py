"""Reads that one slow answer does not end: a read that failed for want of time or of
Firestore (a timeout, `UNAVAILABLE`, ...: `READ_FAILURES`) is sent again, up to `READ_TRIES`
times in all, while a budget lasts.

One mechanism for every read a relay run depends on: the drain's page queries
(`relay.read.page_reads`, sent again from their cursor on the drain's thread; a
partition whose reads keep failing is given up for the run) and, through `read_retrying`,
the reads a run makes in line: a timer run's survey, the held-events reads, the re-check
after a release, the per-event due queries and a backlog run's counts beside its drain.
Each try is bounded by the Firestore timeout (and the run's envelope, `LeaseStore.bounded`);
every try after the first is counted (the relay's `readRetries`). A read that fails once
the budget has run out raises `ReadBudgetSpent`: the run stops as out of budget
(`stoppedBy: budget`), not as a Firestore error; one that fails `READ_TRIES` times within
the budget is the Firestore error it is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, MutableMapping
from typing import Any, TypeVar

from google.api_core import exceptions as google_exceptions
from google.api_core.exceptions import RetryError

__all__ = ["READ_FAILURES", "READ_TRIES", "ReadBudgetSpent", "counter", "read_retrying"]

T = TypeVar("T")
_COUNTING = threading.Lock()  # reads retried on several threads at once (the re-check)

# A read's tries in one run before its failure is the run's (or its partition is given up).
READ_TRIES = 3
# The failures worth another try: the read ran out of time, or Firestore could not answer.
READ_FAILURES: tuple[type[Exception], ...] = (
    google_exceptions.DeadlineExceeded,
    google_exceptions.ServiceUnavailable,
    google_exceptions.InternalServerError,
    google_exceptions.ResourceExhausted,
    google_exceptions.Aborted,
    RetryError,
)


class ReadBudgetSpent(Exception):
    """A read failed and the run's budget is over: the run stops `budget`."""


def counter(counts: MutableMapping[Any, int], key: Any) -> Callable[[], None]:
    """A `retried` for `read_retrying`: adds 1 to `counts[key]` (thread-safe among these)."""

    def count() -> None:
        with _COUNTING:
            counts[key] = counts.get(key, 0) + 1

    return count


def read_retrying(read: Callable[[], T], *, until: float, retried: Callable[[], None]) -> T:
    """`read()`, called again on a read failure (`READ_FAILURES`) up to `READ_TRIES` times
    in all, `retried()` before each new try; `ReadBudgetSpent` when one fails at or after
    `until` (monotonic: the budget), the last failure itself when every try failed within
    it."""
    tries = 1
    while True:
        try:
            return read()
        except READ_FAILURES as exc:
            if time.monotonic() >= until:
                spent = f"a read failed after the budget: {type(exc).__name__}"
                raise ReadBudgetSpent(spent) from exc
            if tries >= READ_TRIES:
                raise
            tries += 1
            retried()
