"""What one drain works with: the publishing pool, the settler, the count of leased events
not settled yet, the run's deadline and the channel's circuit breaker."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from app.relay.breaker import Breaker
from app.relay.event_lease import Lease
from app.relay.publishers import PublishResult
from app.relay.ramp import RampGovernor
from app.relay.settler import Settler


@dataclass(frozen=True)
class Pipeline:
    """What `Relay.deliver()` works with: see `Relay.pipeline()`. `deadline` is monotonic."""

    pool: ThreadPoolExecutor
    settler: Settler
    in_flight: InFlight
    deadline: float
    instance: str
    tally: Counter[str]
    breaker: Breaker
    ramp: RampGovernor | None = None  # RELAY_RAMP=on: paces reads and settles


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


def hand_to(settler: Settler, lease: Lease) -> Callable[[Future[PublishResult | None]], None]:
    """A done-callback that passes a publish's result to the settler."""

    def settle(published: Future[PublishResult | None]) -> None:
        settler.put(lease, published.result())  # the relay's publish answers, never raises

    return settle
