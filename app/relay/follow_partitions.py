"""Follow mode with partition leases: partitioned runs, one after another, woken by a listener.

Per-event leases let the follower lease events straight from its listener's window; with
partition leases an event is delivered only by the holder of its partition, so the follower
runs the same drain as the timer (`Relay.run()`) again and again: at once when its listener
sees the window of due `PENDING` events change, and at least every `RELAY_FOLLOW_POLL_SECONDS`
(which also covers a listener that failed or stalled). It runs beside the timer-triggered
function without racing it: they split the partitions between them.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions

from app.logs import log_event
from app.relay.follow_progress import (
    DEFAULT_PROGRESS_SECONDS,
    RUN_COUNTS,
    FollowProgress,
)

if TYPE_CHECKING:
    from app.relay.core import Relay

logger = logging.getLogger("app.relay.follow")

WINDOW = 50
# Counts that are not sums over runs: the last run's lag stands for the follower's.
_NOT_SUMMED = ("lagMs",)


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
    tally: Counter[str] = Counter()
    progress = FollowProgress(instance, tally, progress_seconds)
    progress.started(relay.store.collection.id, WINDOW, config.follow_poll_seconds)
    watch = None
    try:
        watch = relay.store.watch_pending(WINDOW, lambda _documents: changed.set())
    except google_exceptions.GoogleAPIError as exc:  # polling alone still delivers everything
        tally["listenerDown"] += 1
        log_event(logger, logging.WARNING, "relay.listener_down", f"no listener: {exc}")
    listening = watch is not None
    try:
        while not stop.is_set():
            changed.clear()
            summary = relay.run(
                time_budget=config.time_budget_seconds, instance_id=instance, stop=stop
            )
            for name in RUN_COUNTS:
                value = int(summary.get(name) or 0)
                if name in _NOT_SUMMED:
                    tally[name] = value
                else:
                    tally[name] += value
            tally["runs"] += 1
            tally["polls"] += 1
            if summary["status"] == "error":
                tally["errors"] += 1
            progress.tick(listening)
            if summary["stoppedBy"] in ("drained", "error", "channel"):
                # Until the window changes, the next poll is due, or stop() (which sets it);
                # waking for each progress line on the way.
                until = time.monotonic() + config.follow_poll_seconds
                while not stop.is_set() and (left := until - time.monotonic()) > 0:
                    if changed.wait(max(0.0, min(left, progress.next_at - time.monotonic()))):
                        break
                    progress.tick(listening)
            stop.wait(0.05 if summary["stoppedBy"] == "drained" else 1.0)
    finally:
        if watch is not None:
            watch.unsubscribe()  # type: ignore[no-untyped-call]
    return progress.summary()
