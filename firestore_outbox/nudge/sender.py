"""`Nudger`: sends the nudges of a process from one background thread, never from a commit.

    commit ── nudge(partitions): put_nowait on a bounded queue (full: dropped, counted) ── back
    sender thread: take everything queued ─ ONE nudge of the union ─ wait out the interval ─ ...

One thread and one nudge at a time: at most one nudge is in flight per partition (and per
process), and every commit that comes while one is in flight or the interval runs is carried
by the next one. The interval adapts to the load: after a nudge that carried one commit or a
few it is the configured one (a commit waits for none, or for part of one), after a nudge
that carried many it stretches, up to `MAX_STRETCH` times (each relay invocation then
delivers more: fewer invocations per event where there are many events, no wait where few).
Each nudge is bounded by its target's timeout; a failure is logged and counted, never
raised. A dropped or failed nudge costs latency only: the timer still delivers.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Iterable
from typing import Protocol

logger = logging.getLogger("firestore_outbox.nudge")

__all__ = ["NudgeTarget", "Nudger"]

_CLOSE = frozenset({-1})
# The interval after a nudge of n commits: interval * clamp(n / COMMITS_PER_INTERVAL, 1,
# MAX_STRETCH). At 10 commits/s with 0.1 s, each nudge carries one: 0.1 s, about a nudge per
# commit. At 100/s: 0.3 s, about 3.3 relay invocations a second, 0.033 per commit.
COMMITS_PER_INTERVAL = 4
MAX_STRETCH = 3.0


class NudgeTarget(Protocol):
    """Where nudges go: `send` answers whether the nudge was taken; it may raise (counted)."""

    def send(self, partitions: frozenset[int]) -> bool: ...

    def close(self) -> None: ...


class Nudger:
    """Queues nudges (`nudge`) for a background thread that sends them to `target`;
    `counts` says what became of them (`requested`, `dropped`, `sent`, `failed`)."""

    def __init__(
        self, target: NudgeTarget, *, queue_size: int = 1000, interval_seconds: float = 0.1
    ) -> None:
        self._target = target
        self._interval = interval_seconds
        self._queue: queue.Queue[frozenset[int]] = queue.Queue(queue_size)
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._idle = threading.Condition(self._lock)
        self._busy = 0  # nudges queued or being sent
        self._thread = threading.Thread(target=self._loop, name="outbox-nudge", daemon=True)
        self._thread.start()

    def nudge(self, partitions: Iterable[int]) -> None:
        """Ask for a nudge of `partitions`; returns at once and never raises."""
        try:
            wanted = frozenset(partitions)
            if not wanted:
                return
            with self._lock:
                self._counts["requested"] += 1
                self._busy += 1
            self._queue.put_nowait(wanted)
        except queue.Full:
            self._settle("dropped", 1)
            logger.debug("nudge queue full: nudge dropped (the timer delivers)")
        except Exception:  # a nudge must never fail a commit
            logger.exception("nudge not queued")

    @property
    def counts(self) -> Counter[str]:
        """A copy of the counts so far."""
        with self._lock:
            return Counter(self._counts)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until every nudge asked for was sent, failed or dropped (tests, the demo)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._busy == 0, timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued (within `timeout`), stop the thread, close the target."""
        with contextlib.suppress(queue.Full):
            self._queue.put(_CLOSE, timeout=timeout)
        self._thread.join(timeout)
        self._target.close()

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            batch = [first]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            closing = any(b is _CLOSE for b in batch)
            requests = [b for b in batch if b is not _CLOSE]
            if requests:
                self._send(frozenset().union(*requests), len(requests))
            if closing:
                return
            if self._interval:  # commits meanwhile ride on the next nudge
                time.sleep(self._interval * stretch(len(requests)))

    def _send(self, partitions: frozenset[int], requests: int) -> None:
        started = time.monotonic()
        try:
            sent = self._target.send(partitions)
        except Exception as exc:  # never raised: logged and counted
            sent = False
            logger.warning("nudge failed: %s", type(exc).__name__)
        took = round((time.monotonic() - started) * 1000)
        if not sent:
            logger.warning("nudge of %d partitions not taken (%d ms)", len(partitions), took)
        with self._lock:
            self._counts["nudges"] += 1
            self._counts["coalesced"] += requests - 1
        self._settle("sent" if sent else "failed", requests)

    def _settle(self, outcome: str, requests: int) -> None:
        with self._idle:
            self._counts[outcome] += requests
            self._busy -= requests
            if self._busy <= 0:
                self._idle.notify_all()


def stretch(commits: int) -> float:
    """How many intervals to wait after a nudge that carried `commits` commits."""
    return min(MAX_STRETCH, max(1.0, commits / COMMITS_PER_INTERVAL))
