"""What one drain works with: the publishing pool, the settler, the count of leased events
not settled yet, the run's deadline and the channel's circuit breaker."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from firestore_outbox.publishers.base import PublishResult
from firestore_outbox.relay.attempts import retry_for_bug
from firestore_outbox.relay.breaker import Breaker
from firestore_outbox.relay.held_event import Lease
from firestore_outbox.relay.ramp import RampGovernor
from firestore_outbox.relay.settling.settler import Settler
from firestore_outbox.relay.summary import Tally


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
        settler.put(lease, outcome_of(published, lease))

    return settle


def outcome_of(published: Future[PublishResult | None], lease: Lease) -> PublishResult | None:
    """A publish's result; a retry if the attempt raised after all (a bug in its own code:
    tracing, metrics). A done-callback that raises is only logged by the pool, and its lease
    was then neither settled nor counted done: the run waited for it for ever."""
    try:
        return published.result()
    except Exception as exc:
        event_id = lease.event.event_id
        return retry_for_bug(
            "relay.attempt_raised",
            f"the attempt on event {event_id} raised",
            exc,
            event_id=event_id,
            attempt=lease.attempt,
            # The class only: its message may hold what the publisher's errors are masked for.
            error=f"the attempt raised {type(exc).__name__}",
        )
