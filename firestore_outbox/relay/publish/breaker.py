"""`Breaker`: the relay's circuit breaker for a broken channel.

`Outcome.CHANNEL` says the channel is broken, not the event (401, 403, 404, 405 from the
endpoint, DNS, TLS or connect failures): every other event would fail the same way. Each such
event is handed back without spending its attempt, and after `threshold` of them in a row the
breaker opens: the run stops leasing and releases what it leased and has not sent, so one
configuration mistake costs no event an attempt, let alone turns the outbox FAILED.

A timer run simply ends there. A long-lived worker (follow mode) keeps its breaker: it stays
open for `cooldown` seconds, then lets deliveries try the channel again (the next CHANNEL
result opens it at once, any other closes it).
"""

from __future__ import annotations

import logging
import threading
import time

from firestore_outbox.observability.logs import log_event
from firestore_outbox.publishers.base import Outcome, PublishResult, error_class

logger = logging.getLogger("firestore_outbox.relay")

# How long an open breaker stays open in a long-lived worker: about one timer tick.
COOLDOWN_SECONDS = 60.0


class Breaker:
    """Counts CHANNEL results in a row (any other result resets it); thread-safe."""

    def __init__(
        self, threshold: int, instance: str, *, cooldown: float = COOLDOWN_SECONDS
    ) -> None:
        self._threshold = threshold
        self._instance = instance
        self._cooldown = cooldown
        self._lock = threading.Lock()
        self._in_a_row = 0
        self._opened_at = -float("inf")
        self.error_class: str | None = None  # of the result that last opened it
        self.error: str | None = None  # and its error, as the publisher said it

    @property
    def open(self) -> bool:
        """Deliveries must not be tried: the channel was found broken within the cooldown."""
        return time.monotonic() < self._opened_at + self._cooldown

    def record(self, result: PublishResult | None) -> None:
        """Count one publish's result (None: never sent, which says nothing)."""
        if result is None:
            return
        with self._lock:
            if result.outcome is not Outcome.CHANNEL:
                self._in_a_row = 0
                return
            self._in_a_row += 1
            if self.open or self._in_a_row < self._threshold:
                return
            self.error_class, self.error = error_class(result), result.error
            self._opened_at = time.monotonic()
        log_event(
            logger,
            logging.ERROR,
            "relay.channel_broken",
            f"relay {self._instance}: the channel is broken ({self._threshold} deliveries in "
            f"a row failed: {result.error}); stopping, leased events released",
            instanceId=self._instance,
            errorClass=self.error_class,
            error=result.error,
            threshold=self._threshold,
        )
