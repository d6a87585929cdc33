"""`ProcessNudge` (`OUTBOX_NUDGE=process`): drains the nudged partitions in this process,
several at once, one drain per partition at a time.

    send(partitions) ── mark them wanted ── return True at once
    wanted, not being drained, a worker free ── one Relay.run(partitions=those) on the pool
    a drain ends ── its partitions free again; the ones wanted meanwhile drain next

A partition nudged while its own drain runs is drained again right after it: that drain may
have read its last page before the new event was committed, and the event must not wait for
the timer. So at most one drain is in flight per partition per process, with one more queued,
and that is the coalescing: the nudger does not pace this target (`paced = False`), since a
drain in this process costs no Function Compute invocation, and a drain of other partitions
need not wait for one under way (before, one drain of 300-400 ms held the nudger's single
thread, and every commit behind it waited for it and then for the interval).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from firestore_outbox.nudge.sender import Nudger
    from firestore_outbox.relay import Relay

logger = logging.getLogger("firestore_outbox.nudge")

__all__ = ["DRAINS", "ProcessNudge"]

DRAINS = 4  # drains under way at once; more wanted partitions wait for the next free one


class ProcessNudge:
    """Drains nudged partitions on a pool of `drains` threads with the relay's own settings.
    What a drain's re-check finds after a release goes back through the nudger (`bind`),
    which hands it back here: drained again once that drain has ended."""

    paced = False  # the per-partition single flight coalesces; no invocation to save

    def __init__(self, relay: Relay, *, drains: int = DRAINS) -> None:
        self._relay = relay
        self._hand_off: Callable[[frozenset[int]], object] | None = None
        self._max = drains
        self._pool = ThreadPoolExecutor(drains, "outbox-drain")
        self._changed = threading.Condition()
        self._wanted: set[int] = set()  # nudged, no drain of them started since
        self._draining: set[int] = set()
        self._drains = 0
        self._closed = False

    def bind(self, nudger: Nudger) -> None:
        """Hand what a drain's re-check finds to `nudger` (and so, back here)."""
        self._hand_off = nudger.nudge

    def send(self, partitions: frozenset[int]) -> bool:
        """Mark `partitions` wanted and start a drain of those not being drained; at once."""
        with self._changed:
            if self._closed:
                return False
            self._wanted |= partitions
            self._start()
        return True

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no partition is wanted or being drained."""
        with self._changed:
            return self._changed.wait_for(lambda: not (self._wanted or self._drains), timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Start no more drains, wait (within `timeout`) for those under way, close the
        relay. Partitions still wanted are left to the timer."""
        with self._changed:
            self._closed = True
            running = 0 if self._changed.wait_for(lambda: not self._drains, timeout) else 1
        self._pool.shutdown(wait=False, cancel_futures=True)
        if running:  # a relay closed under a drain would fail it: left to the process's end
            logger.warning("in-process drains still running at close: relay left open")
            return
        self._relay.close()

    def _start(self) -> None:
        """With `_changed` held: one drain of every wanted partition not being drained."""
        ready = frozenset(self._wanted - self._draining)
        if not ready or self._drains >= self._max or self._closed:
            return
        self._wanted -= ready
        self._draining |= ready
        self._drains += 1
        self._pool.submit(self._drain, ready)

    def _drain(self, partitions: frozenset[int]) -> None:
        try:
            summary = self._relay.run(partitions=partitions, hand_off=self._hand_off)
            if not summary.ok:
                logger.warning("in-process drain of %d partitions not ok", len(partitions))
        except Exception:  # a drain must not end the pool's thread: the timer delivers
            logger.exception("in-process drain failed")
        finally:
            with self._changed:
                self._draining -= partitions
                self._drains -= 1
                self._start()
                self._changed.notify_all()
