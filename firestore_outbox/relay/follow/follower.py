"""`Follower`: the relay as a long-running worker that delivers as soon as an event commits.

A Firestore listener (`firestore_outbox.relay.follow.listener`) keeps the window of the first
`WINDOW` `PENDING` events (in `nextAttemptAt` order) up to date; the worker leases the due ones
straight from the window with the same conditional writes as `Relay.run()`, so it can run beside the
timer-triggered function: whoever writes the lease first delivers, the other is refused.

    commit ─▶ listener pushes the window ─▶ lease (if unchanged) ─▶ POST ─▶ settle

A listener can fail or stall, so the worker never trusts it alone: every
`RELAY_FOLLOW_POLL_SECONDS` it re-reads due and abandoned events with the relay's due
queries (and takes the listener down if the re-read finds an event the window missed); while
the listener is down it polls every second and resubscribes with backoff. A Firestore error
takes the listener down too and the worker waits out the same backoff, so an unreachable
Firestore costs a few calls a minute and no CPU to speak of.
"""

from __future__ import annotations

import datetime
import logging
import math
import threading
import time
import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions

from firestore_outbox.fields import NEXT_ATTEMPT_AT
from firestore_outbox.firestore.watch_failures import route_watch_failures, watch_failures
from firestore_outbox.observability.logs import log_event
from firestore_outbox.relay.follow.listener import (
    HEALTH_CHECK_SECONDS,
    POLL_WHILE_DOWN_SECONDS,
    Listener,
)
from firestore_outbox.relay.follow.partitioned import follow_partitions
from firestore_outbox.relay.follow.progress import DEFAULT_PROGRESS_SECONDS, FollowProgress
from firestore_outbox.relay.partition_settings import LeaseMode
from firestore_outbox.relay.read.due import look_for_due
from firestore_outbox.relay.read.unscheduled import find_unscheduled
from firestore_outbox.relay.run.relay import Pipeline, Relay
from firestore_outbox.relay.summary import Count, Tally

if TYPE_CHECKING:
    from google.cloud.firestore import DocumentSnapshot

    from firestore_outbox.firestore.raw import DueDocument

__all__ = ["Follower", "route_watch_failures"]  # the opt-in that names a stream's error

logger = logging.getLogger(__name__)

# The listener's window: big enough for the events of one listener round trip at high rates,
# small because a listener may send the whole window again after a change (the emulator does
# after every one), and a larger backlog is drained through the window as it slides.
WINDOW = 50
# Events without a timestamp nextAttemptAt looked through per re-read, as in `Relay.run()`.
UNSCHEDULED_SCAN_LIMIT = 1000


class Follower:
    """Runs `relay` in follow mode from `run()` until `stop()`; see the module docstring."""

    def __init__(self, relay: Relay, *, progress_seconds: float = DEFAULT_PROGRESS_SECONDS) -> None:
        self._relay = relay
        self._progress_seconds = progress_seconds
        self._config = relay.config
        self._changed = threading.Event()
        self._stop = threading.Event()
        self._unscheduled_checked = -math.inf

    def stop(self) -> None:
        """Make `run()` return once what it leased is settled (safe from a signal handler)."""
        self._stop.set()
        self._changed.set()

    def run(self, *, instance_id: str | None = None) -> dict[str, Any]:
        """Deliver until `stop()`; return the summary. A Firestore error is logged and the
        worker starts over after the listener's backoff instead of exiting. With partition
        leases (the default) it runs `firestore_outbox.relay.follow.partitioned` instead."""
        if self._config.partitions.leases is LeaseMode.PARTITION:
            return follow_partitions(
                self._relay,
                self._stop,
                self._changed,
                instance_id,
                progress_seconds=self._progress_seconds,
            )
        stop = self._stop
        instance = instance_id or uuid.uuid4().hex
        tally: Tally = Counter()
        size = min(self._config.batch_size, WINDOW)
        progress = FollowProgress(instance, tally, self._progress_seconds)
        progress.started(self._relay.store.collection.id, size, self._config.follow_poll_seconds)
        listener = Listener(
            self._relay.store,
            size,
            self._changed.set,
            first_snapshot_seconds=self._config.firestore_timeout_seconds,
            tally=tally,
        )
        with watch_failures(listener.failed):
            try:
                while not stop.is_set():
                    try:
                        self._follow(listener, instance, tally, progress)
                    except google_exceptions.GoogleAPIError as exc:
                        tally[Count.ERRORS] += 1
                        log_event(
                            logger,
                            logging.ERROR,
                            "relay.firestore_error",
                            f"relay {instance}: Firestore error, starting over: {exc}",
                            instanceId=instance,
                            errorClass=type(exc).__name__,
                        )
                        listener.down("Firestore error", exc)
                        while not stop.wait(_until(min(listener.retry_at, progress.next_at))):
                            progress.tick(listener.up)
                            if time.monotonic() >= listener.retry_at:
                                break
            finally:
                listener.close()
        return progress.summary()

    def _follow(
        self, listener: Listener, instance: str, tally: Tally, progress: FollowProgress
    ) -> None:
        relay, config, stop = self._relay, self._config, self._stop
        limit = config.batch_size
        tried: dict[str, datetime.datetime] = {}  # leased (or lost) at this update time
        next_poll = -math.inf  # at once: what was committed while no one was looking
        with relay.pipeline(math.inf, instance, tally) as pipeline:
            while not stop.is_set() and pipeline.settler.error is None:
                if not pipeline.in_flight.wait_below(limit, timeout=0.1):
                    continue  # still two batches in flight: look at stop again
                listener.check()
                progress.tick(listener.up, pipeline.settler.tally)
                self._changed.clear()
                resubscribe = not listener.subscribed and time.monotonic() >= listener.retry_at
                if resubscribe or time.monotonic() >= next_poll:
                    full = self._poll(pipeline, listener, tried)
                    interval = config.follow_poll_seconds
                    if not listener.up:
                        interval = min(interval, POLL_WHILE_DOWN_SECONDS)
                    next_poll = -math.inf if full else time.monotonic() + interval
                if resubscribe:
                    listener.subscribe()  # Firestore has just answered the poll
                window = listener.window()
                if listener.up:
                    tried = {d.id: tried[d.id] for d in window if d.id in tried}
                server_now = relay.store.clock.earliest()  # set by the first poll
                due, wait = _due(window, tried, config.follow_poll_seconds, server_now)
                if due:
                    tried.update((d.id, d.update_time) for d in due)
                    relay.deliver(pipeline, due)
                    continue
                now = time.monotonic()
                check_in = HEALTH_CHECK_SECONDS if listener.subscribed else listener.retry_at - now
                progress_in = progress.next_at - now
                self._changed.wait(max(0.0, min(wait, next_poll - now, check_in, progress_in)))

    def _poll(self, pipeline: Pipeline, listener: Listener, tried: dict[str, Any]) -> bool:
        """Deliver abandoned and due events found with the relay's due queries, on
        Firestore's clock (and, at the re-read pace, events without a timestamp
        `nextAttemptAt`, which the window's order leaves out); True if there may be more."""
        store, config, tally = self._relay.store, self._config, pipeline.tally
        found: list[DueDocument] = []
        if time.monotonic() - self._unscheduled_checked >= config.follow_poll_seconds:
            # Also the first reading of Firestore's clock, which look_for_due needs.
            unscheduled = find_unscheduled(store, scan_limit=UNSCHEDULED_SCAN_LIMIT)
            self._unscheduled_checked = time.monotonic()
            tally[Count.UNSCHEDULED] += unscheduled.count
            found += unscheduled.found[: config.batch_size]
        due, abandoned = look_for_due(store, config, tally, look_for_abandoned=True)
        if listener.up and listener.stale(due[abandoned:], store.clock.earliest()):
            listener.down("stale window")
        found += due
        if not listener.up:
            listener.polling()
            # No window prunes `tried` while the listener is down: keep what this poll saw.
            for seen_before in set(tried) - {d.id for d in found}:
                del tried[seen_before]
        tally[Count.REREADS if listener.up else Count.POLLS] += 1
        fresh = [d for d in found if tried.get(d.id) != d.update_time]
        if fresh:
            tried.update((d.id, d.update_time) for d in fresh)
            self._relay.deliver(pipeline, fresh)
        return len(due) == config.batch_size


def _until(moment: float) -> float:
    return max(0.0, moment - time.monotonic())


def _due(
    window: list[DocumentSnapshot[Any]],
    tried: dict[str, datetime.datetime],
    longest_wait: float,
    now: datetime.datetime,
) -> tuple[list[DocumentSnapshot[Any]], float]:
    """The window's due events not tried in their current state at `now` (Firestore's
    time), and how long to wait for the first one that is not due yet."""
    due: list[DocumentSnapshot[Any]] = []
    for document in window:
        if tried.get(document.id) == document.update_time:
            continue
        at = document.get(NEXT_ATTEMPT_AT)
        if isinstance(at, datetime.datetime) and at > now:
            # The window is in nextAttemptAt order: everything after this is later still.
            return due, min(longest_wait, (at - now).total_seconds())
        due.append(document)  # a malformed one too: leasing it parks it as FAILED
    return due, longest_wait
