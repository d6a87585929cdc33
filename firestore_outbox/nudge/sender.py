"""`Nudger`: sends the nudges of a process from one background thread, never from a commit.

    commit ── nudge(partitions): put_nowait on a bounded queue (full: dropped, counted) ── back
    sender thread: take a nudge ─ a token? send now : wait for the next token ─ take everything
                   queued meanwhile ─ ONE nudge of the union ─ ...

One thread and one nudge at a time: at most one nudge is in flight per partition (and per
process), and every commit that comes while one is in flight or while the sender waits for a
token is carried by the next one. The pace is a token bucket (`Pace`): a nudge goes at once
while a token is left (2 at most: a steady 10 commits/s with some jitter never waits); tokens
come back one per interval, and the interval adapts to the load: after a nudge that carried
one commit or a few it is the configured one, after one that carried many it stretches, up to
`MAX_STRETCH` times (each relay invocation then delivers more: fewer invocations per event
where there are many events, no wait where few). A target that costs no invocation (`process`:
its own per-partition single flight coalesces) says so (`paced = False`) and is not paced.
Each nudge is bounded by its target's timeout; a failure is counted, logged (at most once a
minute each kind: `Complaints`) and never raised. A dropped or failed nudge costs latency
only: the timer still delivers.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Protocol

from firestore_outbox.nudge.complaints import Complaints

logger = logging.getLogger("firestore_outbox.nudge")

__all__ = ["NudgeTarget", "Nudger", "Pace"]

_CLOSE = frozenset({-1})
# The interval after a nudge of n commits: interval * clamp(n / COMMITS_PER_INTERVAL, 1,
# MAX_STRETCH). At 10 commits/s with 0.1 s, each nudge carries one: 0.1 s, about a nudge per
# commit. At 100/s: 0.3 s, about 3.3 relay invocations a second, 0.033 per commit.
COMMITS_PER_INTERVAL = 4
MAX_STRETCH = 3.0
# Tokens the bucket holds at most: a burst of two goes at once, then one per interval. One
# would make a commit that comes a little early at a steady 10/s wait out the rest.
BURST = 2.0


class NudgeTarget(Protocol):
    """Where nudges go: `send` answers whether the nudge was taken; it may raise (counted).
    A target may also say `paced = False` (its nudges cost no invocation: never waited for)
    and have `wait_idle(timeout)` (work the nudges started, which `Nudger.wait_idle` waits
    for too)."""

    def send(self, partitions: frozenset[int]) -> bool: ...

    def close(self) -> None: ...


class Nudger:
    """Queues nudges (`nudge`) for a background thread that sends them to `target`;
    `counts` says what became of them (`requested`, `dropped`, `sent`, `failed`)."""

    def __init__(
        self,
        target: NudgeTarget,
        *,
        queue_size: int = 1000,
        interval_seconds: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self._target = target
        paced = getattr(target, "paced", True) and interval_seconds > 0
        self._pace = Pace(interval_seconds, clock) if paced else None
        self._sleep = sleep
        self._complaints = Complaints(clock)
        self._queue: queue.Queue[frozenset[int]] = queue.Queue(queue_size)
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._idle = threading.Condition(self._lock)
        self._busy = 0  # nudges queued or being sent
        self._closed = False
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
                if self._closed:  # no thread sends it: never queued, so never waited for
                    self._counts["dropped"] += 1
                    return
                self._busy += 1
                # Under the lock: `close()` marks the nudger closed under it, so a nudge
                # that found it open is queued ahead of the close and still sent.
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
        """Wait until every nudge asked for was sent, failed or dropped, and the work the
        target started for them is done (`process`: the drains; tests, the demo)."""
        deadline = time.monotonic() + timeout
        target_idle = getattr(self._target, "wait_idle", None)
        while True:
            with self._idle:
                left = deadline - time.monotonic()
                if not self._idle.wait_for(lambda: self._busy == 0, max(0.0, left)):
                    return False
            if target_idle is None:
                return True
            if not target_idle(max(0.0, deadline - time.monotonic())):
                return False
            with self._lock:  # a drain may have handed partitions back meanwhile
                if self._busy == 0:
                    return True

    @property
    def closed(self) -> bool:
        """Whether `close()` was called: a closed nudger sends nothing more (its nudges are
        counted `dropped`), and the process's caches build a new one in its place."""
        with self._lock:
            return self._closed

    def close(self, timeout: float = 5.0) -> None:
        """Send what is queued (within `timeout`), stop the thread, close the target."""
        with self._lock:
            self._closed = True
        with contextlib.suppress(queue.Full):
            self._queue.put(_CLOSE, timeout=timeout)
        self._thread.join(timeout)
        self._target.close()

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if self._pace is not None and first is not _CLOSE:
                # No token: wait for the next; what is queued meanwhile rides on this nudge.
                wait = self._pace.wait()
                if wait > 0:
                    self._sleep(wait)
            batch = [first]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            closing = any(b is _CLOSE for b in batch)
            requests = [b for b in batch if b is not _CLOSE]
            if requests:
                if self._pace is not None:
                    self._pace.spend(len(requests))
                self._send(frozenset().union(*requests), len(requests))
            if closing:
                return

    def _send(self, partitions: frozenset[int], requests: int) -> None:
        started = time.monotonic()
        try:
            sent = self._target.send(partitions)
        except Exception as exc:  # never raised: logged and counted
            sent = False
            self._complaints.complain("failed", "nudge failed: %s", type(exc).__name__)
        took = round((time.monotonic() - started) * 1000)
        if not sent:
            self._complaints.complain(
                "refused", "nudge of %d partitions not taken (%d ms)", len(partitions), took
            )
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


class Pace:
    """A token bucket: `wait()` says how long until a token (0: one is there); `spend(n)`
    takes it for a nudge of `n` commits. Tokens come back one per `interval * stretch(n)` of
    the last nudge's `n`, `BURST` at most."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._interval = interval
        self._clock = clock
        self._period = interval
        self._tokens = BURST
        self._at = clock()

    def wait(self) -> float:
        """Seconds until a token is there."""
        self._refill()
        return max(0.0, (1.0 - self._tokens) * self._period)

    def spend(self, commits: int) -> None:
        """Take a token (one that came while waiting counts) for a nudge of `commits`."""
        self._refill()
        self._tokens = max(0.0, self._tokens - 1.0)
        self._period = self._interval * stretch(commits)

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(BURST, self._tokens + (now - self._at) / self._period)
        self._at = now


def stretch(commits: int) -> float:
    """How many intervals to wait after a nudge that carried `commits` commits."""
    return min(MAX_STRETCH, max(1.0, commits / COMMITS_PER_INTERVAL))
