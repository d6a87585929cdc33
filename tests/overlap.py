"""A downstream that forces two relays to overlap instead of hoping a schedule does it."""

from __future__ import annotations

import threading
import time

from firestore_outbox.consumer.receiver import Answer, Received


class HeldUntilOverlap:
    """Holds every delivery until more are in flight at once than one relay sends (its
    `RELAY_CONCURRENCY`): another relay is delivering too. Then it answers all (`overlapped`),
    or after `WAIT_SECONDS` if that never happens, and the test's `assert overlapped` fails.
    Without it the first relay, started long before the other on a loaded machine, could
    deliver everything on its own. Use it as a `Receiver`'s answer, or call `hold()` from an
    in-process publisher."""

    WAIT_SECONDS = 8.0  # under the relay's 10 s HTTP timeout

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

    def __call__(self, _: Received) -> Answer:
        self.hold()
        return Answer(200)
