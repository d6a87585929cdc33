"""What `outbox relay --follow` says while it runs: a start line, a progress line at a bounded
rate, and a summary whose keys are the same in every run.

Every line is a JSON log record (stderr): `relay.follow_started` once, then
`relay.follow_progress` at most once per `progress_seconds` with the counts so far
(`processed`, `failed`, `retried`, `leased`, `errors`, `listenerUp`, `uptimeS`). The summary
(stdout) always has exactly `SUMMARY_KEYS`, zeros included.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

from firestore_outbox.observability.logs import log_event

# Re-exported: the counts of one relay run, as the relay's summary has them.
from firestore_outbox.relay.summary import RUN_COUNTS as RUN_COUNTS
from firestore_outbox.relay.summary import Count, RunStatus, StopReason, Tally

logger = logging.getLogger("firestore_outbox.relay.follow.follower")

DEFAULT_PROGRESS_SECONDS = 30.0
# Counted in every summary, zeros included: the relay's own counters (their one definition,
# so a counter added there is here too), then follow mode's.
# `runs`: the drains partitioned follow mode has made
# (firestore_outbox/relay/follow/partitioned.py).
SUMMARY_COUNTS: tuple[Count, ...] = (
    *RUN_COUNTS,
    Count.ERRORS,
    Count.LISTENER_DOWN,
    Count.RESUBSCRIBED,
    Count.POLLS,
    Count.REREADS,
    Count.RUNS,
)
SUMMARY_KEYS = frozenset(
    ("status", "stoppedBy", "instanceId", "durationMs", *(c.value for c in SUMMARY_COUNTS))
)
_PROGRESS_COUNTS = (Count.PROCESSED, Count.FAILED, Count.RETRIED, Count.LEASED, Count.ERRORS)


class FollowProgress:
    """Logs the start, then progress no more often than every `every` seconds."""

    def __init__(self, instance: str, tally: Tally, every: float) -> None:
        if not every > 0:
            raise ValueError("the progress interval must be more than 0 seconds")
        self._instance, self._tally, self._every = instance, tally, every
        self._started = time.monotonic()
        self.next_at = self._started + every

    def started(self, collection: str, window: int, poll_seconds: float) -> None:
        log_event(
            logger,
            logging.INFO,
            "relay.follow_started",
            f"relay {self._instance} following {collection}: window {window} events, "
            f"re-read every {poll_seconds:g}s, progress every {self._every:g}s",
            instanceId=self._instance,
            collection=collection,
            window=window,
            pollSeconds=poll_seconds,
        )

    def tick(self, listener_up: bool, settling: Mapping[Count, int] | None = None) -> None:
        """Log a progress line if one is due (call it as often as you like). `settling`: the
        live counts of the pipeline's settler, which reach the tally only when it closes."""
        now = time.monotonic()
        if now < self.next_at:
            return
        # From now, not from the missed time: a long wait never causes a burst of lines.
        self.next_at = now + self._every
        settling = settling or {}
        counts: dict[str, Any] = {
            name.value: self._tally[name] + settling.get(name, 0) for name in _PROGRESS_COUNTS
        }
        log_event(
            logger,
            logging.INFO,
            "relay.follow_progress",
            f"relay {self._instance}: " + ", ".join(f"{n} {k}" for k, n in counts.items()),
            instanceId=self._instance,
            listenerUp=listener_up,
            uptimeS=round(now - self._started),
            **counts,
        )

    def summary(self) -> dict[str, Any]:
        """The summary: exactly `SUMMARY_KEYS`."""
        return {
            "status": RunStatus.OK.value,
            "stoppedBy": StopReason.STOP.value,
            **{name.value: self._tally[name] for name in SUMMARY_COUNTS},
            "instanceId": self._instance,
            "durationMs": round((time.monotonic() - self._started) * 1000),
        }
