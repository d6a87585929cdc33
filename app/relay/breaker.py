"""`Breaker`: the relay's circuit breaker for a broken channel.

`Outcome.CHANNEL` says the channel is broken, not the event (401, 403, 404, 405 from the
endpoint, DNS, TLS or connect failures): every other event would fail the same way. Each such
event is handed back without spending its attempt, and after `threshold` of them in a row the
breaker opens: the run stops leasing and releases what it leased and has not sent, so one
configuration mistake costs no event an attempt, let alone turns the outbox FAILED.
"""

from __future__ import annotations

import logging
import threading

from app.logs import log_event
from app.relay.publishers import Outcome, PublishResult, error_class

logger = logging.getLogger("app.relay")


class Breaker:
    """Counts CHANNEL results in a row (any other result resets it); thread-safe."""

    def __init__(self, threshold: int, instance: str) -> None:
        self._threshold = threshold
        self._instance = instance
        self._lock = threading.Lock()
        self._in_a_row = 0
        self.error_class: str | None = None  # of the result that opened it

    @property
    def open(self) -> bool:
        return self.error_class is not None

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
            self.error_class = error_class(result)
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
