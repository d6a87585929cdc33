"""`Follower`: the relay as a long-running worker that delivers as soon as an event commits.

A Firestore listener keeps the window of the first `WINDOW` `PENDING` events (in
`nextAttemptAt` order) up to date; the worker leases the due ones straight from the window
with the same conditional writes as `Relay.run()`, so it can run beside the timer-triggered
function: whoever writes the lease first delivers, the other is refused.

    commit ─▶ listener pushes the window ─▶ lease (if unchanged) ─▶ POST ─▶ settle

Each event costs the one read of entering the window, and an idle worker costs nothing. A
retry that is not due yet wakes the worker when it is; abandoned leases are looked for every
`RELAY_FOLLOW_POLL_SECONDS`.
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

from app.logs import log_event
from app.relay.core import Pipeline, Relay

if TYPE_CHECKING:
    from google.cloud.firestore import DocumentSnapshot

logger = logging.getLogger(__name__)

# The listener's window: big enough for the events of one listener round trip at high rates,
# small because a listener may send the whole window again after a change (the emulator does
# after every one), and a larger backlog is drained through the window as it slides.
WINDOW = 50


class Follower:
    """Runs `relay` in follow mode from `run()` until `stop()`; see the module docstring."""

    def __init__(self, relay: Relay) -> None:
        self._relay = relay
        self._config = relay.config
        self._window: list[DocumentSnapshot[Any]] = []
        self._lock = threading.Lock()
        self._changed = threading.Event()
        self._stop = threading.Event()

    def stop(self) -> None:
        """Make `run()` return once what it leased is settled (safe from a signal handler)."""
        self._stop.set()
        self._changed.set()

    def run(self, *, instance_id: str | None = None) -> dict[str, Any]:
        """Deliver until `stop()`; return the summary. A Firestore error is logged and the
        worker starts over after a pause instead of exiting."""
        stop = self._stop
        started = time.monotonic()
        instance = instance_id or uuid.uuid4().hex
        tally: Counter[str] = Counter()
        while not stop.is_set():
            try:
                self._follow(stop, instance, tally)
            except google_exceptions.GoogleAPIError as exc:
                tally["errors"] += 1
                log_event(
                    logger,
                    logging.ERROR,
                    "relay.firestore_error",
                    f"relay {instance}: Firestore error, starting over: {exc}",
                    instanceId=instance,
                    errorClass=type(exc).__name__,
                )
                stop.wait(1.0)
        return {
            "status": "ok",
            "stoppedBy": "stop",
            **tally,
            "instanceId": instance,
            "durationMs": round((time.monotonic() - started) * 1000),
        }

    def _on_window(self, documents: list[DocumentSnapshot[Any]]) -> None:
        with self._lock:
            self._window = documents
        self._changed.set()

    def _follow(self, stop: threading.Event, instance: str, tally: Counter[str]) -> None:
        relay, limit = self._relay, self._config.batch_size
        watch = relay.store.watch_pending(min(limit, WINDOW), self._on_window)
        tried: dict[str, datetime.datetime] = {}  # leased (or lost) at this update time
        abandoned_checked = -math.inf
        try:
            with relay.pipeline(math.inf, instance, tally) as pipeline:
                while not stop.is_set() and pipeline.settler.error is None:
                    if not pipeline.in_flight.wait_below(limit, timeout=0.1):
                        continue  # still two batches in flight: look at stop again
                    if time.monotonic() - abandoned_checked >= self._config.follow_poll_seconds:
                        full = self._take_abandoned(pipeline)
                        abandoned_checked = -math.inf if full else time.monotonic()
                    self._changed.clear()
                    with self._lock:
                        window = self._window
                    tried = {d.id: tried[d.id] for d in window if d.id in tried}
                    due, wait = _due(window, tried, self._config.follow_poll_seconds)
                    if due:
                        tried.update((d.id, d.update_time) for d in due)
                        relay.deliver(pipeline, due)
                    else:
                        self._changed.wait(wait)
        finally:
            watch.unsubscribe()  # type: ignore[no-untyped-call]

    def _take_abandoned(self, pipeline: Pipeline) -> bool:
        """Deliver events whose lease expired; True if there may be more."""
        now = datetime.datetime.now(datetime.timezone.utc)
        lock = datetime.timedelta(seconds=self._config.lock_timeout_seconds)
        abandoned = self._relay.store.abandoned(now - lock, self._config.batch_size)
        if abandoned:
            self._relay.deliver(pipeline, abandoned)
        return len(abandoned) == self._config.batch_size


def _due(
    window: list[DocumentSnapshot[Any]],
    tried: dict[str, datetime.datetime],
    longest_wait: float,
) -> tuple[list[DocumentSnapshot[Any]], float]:
    """The window's due events not tried in their current state, and how long to wait for
    the first one that is not due yet."""
    now = datetime.datetime.now(datetime.timezone.utc)
    due: list[DocumentSnapshot[Any]] = []
    for document in window:
        if tried.get(document.id) == document.update_time:
            continue
        at = document.get("nextAttemptAt")
        if isinstance(at, datetime.datetime) and at > now:
            # The window is in nextAttemptAt order: everything after this is later still.
            return due, min(longest_wait, (at - now).total_seconds())
        due.append(document)  # a malformed one too: leasing it parks it as FAILED
    return due, longest_wait
