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

if TYPE_CHECKING:
    from app.relay.core import Relay

logger = logging.getLogger("app.relay.follow")

WINDOW = 50
# The summary's counts added up over the runs.
_SUMMED = ("processed", "failed", "retried", "released", "leased", "lostLeases", "healed")


def follow_partitions(
    relay: Relay, stop: threading.Event, changed: threading.Event, instance_id: str | None
) -> dict[str, Any]:
    """Run `relay` until `stop` is set (whoever sets it also sets `changed`, to wake it);
    the summary adds up every run's counts."""
    config = relay.config
    instance = instance_id or uuid.uuid4().hex
    started = time.monotonic()
    tally: Counter[str] = Counter()
    watch = None
    try:
        watch = relay.store.watch_pending(WINDOW, lambda _documents: changed.set())
    except google_exceptions.GoogleAPIError as exc:  # polling alone still delivers everything
        log_event(logger, logging.WARNING, "relay.listener_down", f"no listener: {exc}")
    try:
        while not stop.is_set():
            changed.clear()
            summary = relay.run(
                time_budget=config.time_budget_seconds, instance_id=instance, stop=stop
            )
            tally.update({name: int(summary.get(name) or 0) for name in _SUMMED})
            tally["runs"] += 1
            if summary["status"] == "error":
                tally["errors"] += 1
            if summary["stoppedBy"] in ("drained", "error", "channel"):
                # Until the window changes, the next poll is due, or stop() (which sets it).
                changed.wait(config.follow_poll_seconds)
            stop.wait(0.05 if summary["stoppedBy"] == "drained" else 1.0)
    finally:
        if watch is not None:
            watch.unsubscribe()  # type: ignore[no-untyped-call]
    return {
        "status": "ok",
        "stoppedBy": "stop",
        **{name: tally[name] for name in (*_SUMMED, "runs", "errors")},
        "instanceId": instance,
        "durationMs": round((time.monotonic() - started) * 1000),
    }
