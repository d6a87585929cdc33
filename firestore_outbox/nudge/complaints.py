"""`Complaints`: the nudger's failures, logged at most once a minute each kind.

A target that refuses every nudge (Function Compute throttling, a wrong URL, an AccessKey
revoked) would log a warning per nudge: ten lines a second at 10 commits/s, paid for in the
log service, hiding everything else. The first failure of a kind is logged at once; the ones
after it within `EVERY_SECONDS` are counted and said in one line with the next one logged.
The counts in `Nudger.counts` stay exact.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

logger = logging.getLogger("firestore_outbox.nudge")

EVERY_SECONDS = 60.0


class Complaints:
    """Logs `complain(kind, message, *args)` at WARNING, at most once per `EVERY_SECONDS`
    for each `kind`, saying how many of that kind went unlogged since."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._quiet: dict[str, int] = {}

    def complain(self, kind: str, message: str, *args: object) -> None:
        now = self._clock()
        with self._lock:
            since = now - self._last.get(kind, now - EVERY_SECONDS)
            if since < EVERY_SECONDS:
                self._quiet[kind] = self._quiet.get(kind, 0) + 1
                return
            self._last[kind] = now
            quiet = self._quiet.pop(kind, 0)
        if quiet:
            message += " (and %d more not logged in the last %d s)"
            args = (*args, quiet, round(since))
        logger.warning(message, *args)
