"""`WarmRelay`: the relay a warm Function Compute instance keeps between invocations, rebuilt
when the configuration changes, and what is wired to it (the backlog gauges' reading, the
re-drive runner, the hand-off nudger).

A warm instance keeps its Firestore client, its HTTP connections and its lease-mode record;
each invocation reads the configuration again (`Configuration.load()`), and a relay built
from other settings is replaced.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from firestore_outbox.config.wiring import Backlog, backlog, build_redrive, build_relay, hand_off
from firestore_outbox.observability.logs import log_event

if TYPE_CHECKING:
    from firestore_outbox.config.loader import Configuration
    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.nudge import Nudger
    from firestore_outbox.relay import Relay, RelayConfig

__all__ = ["WarmRelay"]

logger = logging.getLogger("firestore_outbox.relay")


class WarmRelay:
    """The relay of the current configuration, built once and reused while it holds."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: tuple[tuple[Settings, RelayConfig], Relay] | None = None
        self._backlog: Backlog | None = None

    @property
    def relay(self) -> Relay | None:
        """The relay kept; None before the first (configured) invocation."""
        return None if self._cached is None else self._cached[1]

    def backlog(self) -> tuple[dict[str, int], float | None]:
        """One reading of the current relay's outbox (what the backlog gauges call)."""
        if self._backlog is None:
            raise RuntimeError("no relay yet: nothing to read")
        return self._backlog()

    def get(self, configuration: Configuration) -> Relay:
        """The relay for `configuration`, built on first use or when its settings changed;
        `ConfigError` names a bad variable.

        When the configuration changes, the old relay's publisher is closed: its keep-alive
        connections (to a downstream that may now be the wrong one, with old credentials) are
        not left to the garbage collector. An invocation still running on it (instance
        concurrency) is not disturbed: a request in flight finishes, its connection closes
        after."""
        settings, config = configuration.settings, configuration.relay()
        with self._lock:
            if self._cached is None or self._cached[0] != (settings, config):
                logging.getLogger().setLevel(settings.log_level)
                relay = build_relay(configuration)
                stale, self._cached = self._cached, ((settings, config), relay)
                self._backlog = backlog(relay, configuration)
                if stale is not None:
                    stale[1].close()
            return self._cached[1]

    def hand_off(self, relay: Relay, configuration: Configuration) -> Nudger | None:
        """The nudger a nudged run hands what its re-check found to (None: the run claims
        them again)."""
        return hand_off(relay, configuration)

    def run_redrive(
        self, relay: Relay, configuration: Configuration, left: float, owner: str | None
    ) -> list[dict[str, Any]]:
        """Run the re-drive jobs that wait for a runner, after the live run and within the
        `left` seconds it left (docs/redrive.md); a failure is logged, never the live run's."""
        if left < relay.config.attempt_seconds:
            return []
        try:
            redrive = build_redrive(configuration, relay.db)
            return [report.to_json() for report in redrive.run_due(left, owner=owner)]
        except Exception as exc:  # the live summary stands whatever a job does
            log_event(logger, logging.ERROR, "relay.redrive_failed", f"re-drive failed: {exc}")
            return []
