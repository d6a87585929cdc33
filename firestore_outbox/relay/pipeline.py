"""What one drain works with (`Pipeline`): the publishing pool, the settler, the count of
claimed events not settled yet (`InFlight`), the run's deadline and the channel's circuit
breaker, and why a run should stop now (`Pipeline.stop_reason`). Every step takes it;
`relay.publish.pool` opens it."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firestore_outbox.relay.summary import StopReason, Tally

if TYPE_CHECKING:
    from firestore_outbox.relay.publish.breaker import Breaker
    from firestore_outbox.relay.ramp import RampGovernor
    from firestore_outbox.relay.settle.settler import Settler


@dataclass(frozen=True)
class Pipeline:
    """What `Relay.deliver()` works with: see `Relay.pipeline()`. `deadline` is monotonic."""

    pool: ThreadPoolExecutor
    settler: Settler
    in_flight: InFlight
    deadline: float
    instance: str
    tally: Tally
    breaker: Breaker
    ramp: RampGovernor | None = None  # RELAY_RAMP=on: paces reads and settles

    def stop_reason(self, stop: threading.Event, attempt_seconds: float) -> StopReason | None:
        """Why the run should stop now, if it should: out of time (or `stop` set: follow
        mode is stopping, settle what is in flight, then leave), the channel broken, or the
        settler failed."""
        if stop.is_set() or self.deadline - time.monotonic() < attempt_seconds:
            return StopReason.BUDGET
        if self.breaker.open:
            return StopReason.CHANNEL
        if self.settler.error is not None:
            return StopReason.ERROR
        return None


class InFlight:
    """How many leased events are not settled yet; the relay waits on it before leasing."""

    def __init__(self) -> None:
        self._count = 0
        self._changed = threading.Condition()

    def acquire(self, count: int) -> None:
        with self._changed:
            self._count += count

    def release(self, count: int) -> None:
        with self._changed:
            self._count -= count
            self._changed.notify_all()

    def wait_below(self, limit: int, timeout: float | None = None) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: self._count < limit, timeout)
