"""A downstream that forces two relays to overlap instead of hoping a schedule does it."""

from __future__ import annotations

import threading
import time

from firestore_outbox.consumer.receiver import Received, ReceiverAnswer


class HeldUntilOverlap:
    """Holds every delivery until more are in flight at once than one relay sends (its
    `RELAY_CONCURRENCY`): another relay is delivering too. Then it answers all (`overlapped`),
    or after `WAIT_SECONDS` if that never happens, and the test's `assert overlapped` fails.
    Without it the first relay, started long before the other on a loaded machine, could
    deliver everything on its own. Use it as a `Receiver`'s answer, or call `hold()` from an
    in-process publisher."""

    WAIT_SECONDS = 8.0  # under a held relay's HTTP timeout (`HELD_HTTP_TIMEOUT_SECONDS`)

    def __init__(self, concurrency: int, *, pace: float = 0.0) -> None:
        self._concurrency, self._pace = concurrency, pace
        self._in_flight = 0
        self.overlapped = False
        self._changed = threading.Condition()

    def hold(self) -> None:
        with self._changed:
            self._in_flight += 1
            self.overlapped = self.overlapped or self._in_flight > self._concurrency
            self._changed.notify_all()
            self._changed.wait_for(lambda: self.overlapped, self.WAIT_SECONDS)
            self._in_flight -= 1
        time.sleep(self._pace)  # keeps a relay busy, so one alone would take a while

    def __call__(self, _: Received) -> ReceiverAnswer:
        self.hold()
        return ReceiverAnswer(200)


# What a relay whose deliveries `HeldUntilOverlap` holds must be given: an HTTP timeout longer
# than the hold (the tests' usual 0.5 s gave up on a delivery held while the other relay was
# still starting on a loaded machine: retried, delivered twice or left PENDING) and a lease of
# at least two such attempts (`RelayConfig`), long enough that no renewal is due in a run.
HELD_HTTP_TIMEOUT_SECONDS = HeldUntilOverlap.WAIT_SECONDS + 2
HELD_LEASE_SECONDS = 60.0


def held_relay_variables() -> dict[str, str]:
    """`HELD_HTTP_TIMEOUT_SECONDS` and `HELD_LEASE_SECONDS` as a relay process reads them."""
    return {
        "RELAY_HTTP_TIMEOUT_SECONDS": str(HELD_HTTP_TIMEOUT_SECONDS),
        "RELAY_LOCK_TIMEOUT_SECONDS": str(HELD_LEASE_SECONDS),
    }
