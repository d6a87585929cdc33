"""Follow mode with partition leases: partitioned runs, one after another, woken by a listener.

Per-event leases let the follower lease events straight from its listener's window; with
partition leases an event is delivered only by the holder of its partition, so the follower
runs the same drain as the timer (`Relay.run()`) again and again: at once when its listener
sees the window of the newest `PENDING` events change (an event commits at its top, whatever
older events wait undelivered: a window of the first due ones, full of a held aggregate's
events, never changed), and at least every `RELAY_FOLLOW_POLL_SECONDS`
(which also covers a listener that failed or stalled). It runs beside the timer-triggered
function without racing it: they split the partitions between them.

The listener is watched as in per-event follow mode
(`firestore_outbox.relay.follow.listener.Listener`): a stream
that ended or failed in a loop is taken down and resubscribed with backoff, and a run that
ends on a Firestore error waits out the same backoff, so an unreachable or frozen Firestore
costs a few calls a minute and no CPU to speak of
(`tests/e2e/relay/test_follow_partitions_outage.py`; the figures: docs/failure-catalog.md).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions

from firestore_outbox.firestore.watch_failures import watch_failures
from firestore_outbox.relay.follow.listener import (
    HEALTH_CHECK_SECONDS,
    POLL_WHILE_DOWN_SECONDS,
    Listener,
)
from firestore_outbox.relay.follow.progress import (
    DEFAULT_PROGRESS_SECONDS,
    RUN_COUNTS,
    FollowProgress,
)
from firestore_outbox.relay.publish.breaker import COOLDOWN_SECONDS
from firestore_outbox.relay.summary import Count, RunSummary, StopReason, Tally

if TYPE_CHECKING:
    from firestore_outbox.relay.run.relay import Relay

WINDOW = 50
# Counts that are not sums over runs: the last run's lag stands for the follower's.
_NOT_SUMMED = (Count.LAG_MS,)


def follow_partitions(
    relay: Relay,
    stop: threading.Event,
    changed: threading.Event,
    instance_id: str | None,
    *,
    progress_seconds: float = DEFAULT_PROGRESS_SECONDS,
) -> dict[str, Any]:
    """Run `relay` until `stop` is set (whoever sets it also sets `changed`, to wake it);
    logs the start and progress as per-event follow mode does (`FollowProgress`), and the
    summary, with the same fixed keys, adds up every run's counts."""
    config = relay.config
    instance = instance_id or uuid.uuid4().hex
    tally: Tally = Counter()
    progress = FollowProgress(instance, tally, progress_seconds)
    progress.started(relay.store.collection.id, WINDOW, config.follow_poll_seconds)
    listener = Listener(
        relay.store,
        WINDOW,
        changed.set,
        first_snapshot_seconds=config.firestore_timeout_seconds,
        tally=tally,
        newest=config.partitions.count,  # it only wakes the drain: every commit changes a window
    )
    with watch_failures(listener.failed):
        try:
            while not stop.is_set():
                changed.clear()
                _resubscribe_if_due(listener)
                summary = relay.run(
                    time_budget=config.time_budget_seconds, instance_id=instance, stop=stop
                )
                _add_run(tally, summary)
                if not summary.ok:
                    # Firestore is failing: its listener too, whatever it says; wait out
                    # the backoff (which doubles while the errors go on) before trying again.
                    tally[Count.ERRORS] += 1
                    listener.down("Firestore error")
                    _idle(listener, progress, stop, changed, until=listener.retry_at)
                elif summary.stopped_by is StopReason.CHANNEL:
                    # Each run has a breaker of its own: the follower keeps this one open for
                    # its cooldown, or every new event would claim partitions and send to
                    # the broken channel again.
                    pause = max(config.follow_poll_seconds, COOLDOWN_SECONDS)
                    until = time.monotonic() + pause
                    _idle(listener, progress, stop, changed, until=until, wake=False)
                elif summary.stopped_by is StopReason.DRAINED:
                    interval = config.follow_poll_seconds
                    if not listener.up:  # nothing wakes a follower whose listener is down
                        interval = min(interval, POLL_WHILE_DOWN_SECONDS)
                    _idle(listener, progress, stop, changed, until=time.monotonic() + interval)
                progress.tick(listener.up)
                stop.wait(0.05 if summary.stopped_by is StopReason.DRAINED else 1.0)
        finally:
            listener.close()
    return progress.summary()


def _add_run(tally: Tally, summary: RunSummary) -> None:
    for name in RUN_COUNTS:
        value = int(summary[name])
        if name in _NOT_SUMMED:
            tally[name] = value
        else:
            tally[name] += value
    tally[Count.RUNS] += 1
    tally[Count.POLLS] += 1


def _resubscribe_if_due(listener: Listener) -> None:
    """Subscribe when no subscription is live and its backoff is over (the first time at
    once); a refusal takes the listener down again, and the run that follows polls."""
    if listener.subscribed or time.monotonic() < listener.retry_at:
        return
    try:
        listener.subscribe()
    except google_exceptions.GoogleAPIError as exc:
        listener.down("subscription refused", exc)


def _idle(
    listener: Listener,
    progress: FollowProgress,
    stop: threading.Event,
    changed: threading.Event,
    *,
    until: float,
    wake: bool = True,
) -> None:
    """Wait until `until` (monotonic), a change in the window, or `stop` (which sets
    `changed`); looking at the listener's health and logging progress on the way. A
    listener found down ends the wait only once its resubscription is due. `wake=False`:
    only `until` or `stop` end it."""
    while not stop.is_set():
        listener.check()
        progress.tick(listener.up)
        now = time.monotonic()
        if wake and not listener.subscribed:
            until = min(until, listener.retry_at)
        left = until - now
        if left <= 0:
            return
        check_in = HEALTH_CHECK_SECONDS if listener.subscribed else left
        if changed.wait(max(0.0, min(left, check_in, progress.next_at - now))):
            if wake and listener.subscribed:
                return  # the window changed (a failing stream is checked next time round)
            changed.clear()
