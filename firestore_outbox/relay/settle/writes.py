"""`write_settles`: one group commit of settles, retried until the run's deadline, with the
uncertain ones read back.

Each settle is judged by its own outcome: transient failures (of the whole call or of single
writes) are sent again with backoff until the deadline, so one hiccup does not leave every
delivered event PROCESSING to be delivered again after the lock timeout. A settle sent again
(by the client's retry layer or here) after its first send had landed comes back as a lost
race against itself: only those uncertain ones are read back, in one batched get, and the
settles found as this relay wrote them count as settled, not as lost leases.
"""

from __future__ import annotations

import itertools
import math
import random
import time
from collections.abc import Callable

from firestore_outbox.fields import PROCESSING_INSTANCE_ID
from firestore_outbox.firestore.cas import Change, WriteOutcome, Written
from firestore_outbox.relay.backoff import backoff_pause
from firestore_outbox.relay.outcomes import TRANSIENT_ERRORS
from firestore_outbox.relay.store import LeaseStore
from firestore_outbox.relay.summary import Count, Tally


def write_settles(
    store: LeaseStore,
    changes: list[Change],
    *,
    deadline: float,
    lock_timeout: float,
    instance: str,
    rng: random.Random,
    tally: Tally,
    landing: Callable[[bool], None] = lambda _: None,
) -> tuple[list[Written | None], Exception | None]:
    """Every change's outcome (None: not settled in time), retrying transient failures
    with backoff until `deadline` (monotonic; with none, for one `lock_timeout`), and the
    error of the last failed call when time ran out first (None if there was none): the
    caller raises it after counting. `instance` is the relay's `processingInstanceId`,
    which names its settles; retries and read-backs are counted into `tally`. `landing`
    hears after each call whether it landed (False: Firestore failed it)."""
    if math.isinf(deadline):
        deadline = time.monotonic() + lock_timeout
    written: list[Written | None] = [None] * len(changes)
    todo = list(range(len(changes)))
    resent: set[int] = set()  # sent before: a LOST answer may be to its own first send
    late: Exception | None = None
    for attempt in itertools.count(1):
        if attempt > 1:
            resent.update(todo)
        error: Exception | None = None
        try:
            for n, result in zip(todo, store.write([changes[n] for n in todo]), strict=True):
                written[n] = result
        except TRANSIENT_ERRORS as exc:
            error = exc
        landing(error is None)
        todo = [n for n in todo if (w := written[n]) is None or w.transient]
        pause = backoff_pause(attempt, rng)
        if not todo:
            break
        if time.monotonic() + pause >= deadline:
            late = error  # what is left stays PROCESSING until its lease expires
            break
        tally[Count.SETTLE_RETRIES] += 1
        time.sleep(pause)
    return _read_back(store, changes, written, resent, deadline, instance, tally), late


def _read_back(
    store: LeaseStore,
    changes: list[Change],
    written: list[Written | None],
    resent: set[int],
    deadline: float,
    instance: str,
    tally: Tally,
) -> list[Written | None]:
    """Settles that came back LOST but may have lost only to their own first send: the
    ones found as this relay wrote them were applied (no reads when none is uncertain)."""
    doubtful = [
        n
        for n, w in enumerate(written)
        if w is not None and w.outcome is WriteOutcome.LOST and (w.uncertain or n in resent)
    ]
    if not doubtful:
        return written
    tally[Count.SETTLES_READ_BACK] += len(doubtful)
    holding = {PROCESSING_INSTANCE_ID: instance}
    try:
        found = store.landed([changes[n] for n in doubtful], holding, deadline=deadline)
    except TRANSIENT_ERRORS:
        return written  # not known: they stay lost leases, as the write said
    for n, update_time in zip(doubtful, found, strict=True):
        if update_time is not None:
            written[n] = Written(WriteOutcome.APPLIED, update_time)
    return written
