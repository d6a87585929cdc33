"""`Listener`: the follow mode's Firestore listener, with its health watched.

A `Watch` can end for good (permission denied, a missing index, a stream that failed in a
loop) or stall without a word; either way its window stops changing and a worker leasing from
it goes blind. `Listener` keeps one subscription on the window and knows whether to trust it:

    subscribed ──first snapshot──▶ up ──stream ended / no first snapshot / stale──▶ down
        ▲                                                                           │
        └──────────── resubscribe after 0.5 s, 1 s, 2 s ... (capped, jittered) ◀────┘

While it is down the follower polls due events with the relay's due query (`Follower` does,
asking `polling()`), so nothing waits for the listener to come back.
"""

from __future__ import annotations

import datetime
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from firestore_outbox.fields import NEXT_ATTEMPT_AT
from firestore_outbox.firestore.raw import give_up_when_reconnecting_in_a_loop
from firestore_outbox.firestore.watches import Watches
from firestore_outbox.observability.logs import log_event
from firestore_outbox.relay.summary import Count, Tally

if TYPE_CHECKING:
    from collections.abc import Sequence

    from google.cloud.firestore import DocumentSnapshot, Watch

    from firestore_outbox.firestore.raw import DueDocument
    from firestore_outbox.relay.store import LeaseStore

logger = logging.getLogger(__name__)

RESUBSCRIBE_FIRST_SECONDS = 0.5
RESUBSCRIBE_CAP_SECONDS = 60.0
# A due event the window should show but does not, this long after its last write, means the
# listener stalled (a fresh commit may simply not have reached the listener yet).
STALE_AFTER_SECONDS = 5.0
ERROR_GRACE_SECONDS = 2.5
# How often a live subscription is looked at (an attribute read, no Firestore call).
HEALTH_CHECK_SECONDS = 1.0
# How often a follower polls due events while its listener is down.
POLL_WHILE_DOWN_SECONDS = 1.0


class Listener:
    """Keeps a listener on `store`'s window of the `size` `PENDING` events due first;
    `wake()` is called (on the listener's thread) each time the window changes or the
    stream fails. One follower thread drives it; `window()` is safe from any thread."""

    def __init__(
        self,
        store: LeaseStore,
        size: int,
        wake: Callable[[], None],
        *,
        first_snapshot_seconds: float,
        tally: Tally,
        rng: random.Random | None = None,
        newest: int = 0,
    ) -> None:
        self._store = store
        self.size = size
        # The partition count: the windows of the newest events, not the first due (0).
        self._newest = newest
        self._wake = wake
        self._window: list[DocumentSnapshot[Any]] = []
        self._lock = threading.Lock()
        self._polling_announced = False
        self._first_snapshot_seconds = first_snapshot_seconds
        self._tally = tally
        self._rng = rng or random.Random()
        self._watch: Watch | Watches | None = None
        self._subscribed_at = 0.0
        self._inactive_since: float | None = None
        self._snapshot_seen = threading.Event()
        self._failure: BaseException | None = None
        self._failures = 0  # in a row: sets the backoff
        self._down_since: float | None = None  # the current outage began (monotonic)
        self.retry_at = 0.0  # monotonic time of the next subscription attempt

    @property
    def up(self) -> bool:
        """Subscribed and the first snapshot arrived: the window can be trusted."""
        return self._watch is not None and self._snapshot_seen.is_set()

    @property
    def subscribed(self) -> bool:
        return self._watch is not None

    def window(self) -> list[DocumentSnapshot[Any]]:
        """The window in `nextAttemptAt` order; empty while the listener is not up."""
        with self._lock:
            return self._window if self.up else []

    def failed(self, error: BaseException) -> None:
        """The error the listener's stream ended with (from `watch_failures`, any thread)."""
        self._failure = error
        self._wake()

    def stale(self, due: Sequence[DueDocument], now: datetime.datetime) -> bool:
        """Whether `due` (a due query's answer at `now`) holds an event the window should
        show and, well after its last write, still does not: the listener stalled."""
        window = self.window()
        shown = {d.id for d in window}
        last = window[-1].get(NEXT_ATTEMPT_AT) if len(window) >= self.size else None
        settled_before = now - datetime.timedelta(seconds=STALE_AFTER_SECONDS)
        for document in due:
            at = document.get(NEXT_ATTEMPT_AT)
            belongs = last is None or (isinstance(at, datetime.datetime) and at < last)
            if belongs and document.id not in shown and document.update_time < settled_before:
                return True
        return False

    def polling(self) -> None:
        """Say once per outage that due events are being polled for."""
        if self._polling_announced:
            return
        self._polling_announced = True
        log_event(
            logger,
            logging.INFO,
            "relay.listener_polling",
            "listener down: polling due events with the due query",
        )

    def check(self) -> None:
        """Take the listener down if its stream ended or its first snapshot is overdue."""
        watch = self._watch
        if watch is None:
            return
        if not watch.is_active:
            # The error the stream ended with is raised on another thread after the stream
            # stops and its consumer thread is joined (up to a second): wait for it a little
            # so the log can name it.
            now = time.monotonic()
            self._inactive_since = self._inactive_since or now
            if self._failure is not None or now - self._inactive_since >= ERROR_GRACE_SECONDS:
                self.down("stream ended")
        elif (
            not self._snapshot_seen.is_set()
            and time.monotonic() - self._subscribed_at > self._first_snapshot_seconds
        ):
            self.down("no first snapshot")

    def subscribe(self) -> None:
        """Start a new subscription (the old one, if any, is closed first)."""
        self._close()
        self._failure = None
        self._inactive_since = None
        self._snapshot_seen.clear()
        self._subscribed_at = time.monotonic()
        self._watch = self._store.watch_pending(
            self.size, self._window_changed, newest=self._newest
        )
        group = self._watch.watches if isinstance(self._watch, Watches) else [self._watch]
        for watch in group:
            give_up_when_reconnecting_in_a_loop(watch)

    def down(self, reason: str, error: BaseException | None = None) -> None:
        """Close the subscription, log why (`error`, or the one its stream ended with), and
        schedule the next one with backoff. Called again while already down (a poll failed),
        it only backs off further: `relay.listener_down` is logged when a subscription ends
        or an outage begins."""
        error = error or self._failure
        self._failure = None
        had_subscription = self._watch is not None
        self._close()
        self._failures += 1
        delay = min(RESUBSCRIBE_CAP_SECONDS, RESUBSCRIBE_FIRST_SECONDS * 2 ** (self._failures - 1))
        delay *= 0.5 + self._rng.random() / 2  # many followers must not come back in step
        now = time.monotonic()
        self.retry_at = now + delay
        outage_began = self._down_since is None
        if outage_began:
            self._down_since = now
            self._tally[Count.LISTENER_DOWN] += 1
        elif not had_subscription:
            # Already down and reported: a poll failed meanwhile (the follower logs that
            # Firestore error). No listener went down, so none is reported; only the next
            # subscription waits longer. (The emulator answers a call made just after a
            # listen stream was cancelled with 499 `call already cancelled`: that was
            # reported as the listener going down a second time.)
            return
        log_event(
            logger,
            logging.WARNING,
            "relay.listener_down",
            f"listener down ({reason}): polling due events, resubscribing in {delay:.1f}s",
            reason=reason,
            errorClass=type(error).__name__ if error else None,
            error=str(error) if error else None,
            failuresInARow=self._failures,
            retryInMs=round(delay * 1000),
        )

    def close(self) -> None:
        """End the subscription for good (the follower is stopping)."""
        self._close()

    def _close(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.unsubscribe()

    def _window_changed(self, documents: list[DocumentSnapshot[Any]]) -> None:
        with self._lock:
            self._window = documents
        if not self._snapshot_seen.is_set():
            self._snapshot_seen.set()
            self._healthy()
        self._wake()

    def _healthy(self) -> None:
        # Called on the listener's thread: only counters and a log line, nothing blocking.
        down_since, self._down_since = self._down_since, None
        if down_since is not None:
            self._tally[Count.RESUBSCRIBED] += 1
            log_event(
                logger,
                logging.INFO,
                "relay.listener_resubscribed",
                "listener up again",
                downMs=round((time.monotonic() - down_since) * 1000),
                failuresInARow=self._failures,
            )
        self._failures = 0
        self._polling_announced = False
