"""The watchdog as a timer-triggered Function Compute function of its own
(`s.yaml`: `function_compute/watchdog_handler.handler`), beside the relay's and sharing nothing
with it at run time: another function, its own small timeout and memory, and an import of
neither the relay's core nor any publisher. A relay whose handler cannot import, whose
trigger was disabled or whose credentials expired is what it is there to notice.

Each invocation reads the configuration, runs one check (`outbox watchdog` does the same)
and returns its report; a configuration it cannot use is logged at ERROR
(`watchdog.not_configured`) and returned, never raised into a retry storm.
"""

from __future__ import annotations

import logging
from typing import Any

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.wiring import make_watchdog
from firestore_outbox.errors import OutboxError
from firestore_outbox.observability.logs import configure_logging, log_event
from firestore_outbox.observability.telemetry import configure_telemetry, flush

__all__ = ["watchdog_handler"]

logger = logging.getLogger("firestore_outbox.watchdog")


def watchdog_handler(event: bytes | str | dict[str, Any] | None, context: Any) -> dict[str, Any]:
    """One watchdog check (the timer's `event` is not needed); returns its report."""
    configuration = Configuration.load()
    configure_logging(configuration.secrets(), thread_exceptions=True)
    try:
        try:
            configure_telemetry(configuration.environ)
            report = make_watchdog(configuration).check().to_json()
        except OutboxError as exc:
            log_event(
                logger, logging.ERROR, "watchdog.not_configured", f"watchdog not configured: {exc}"
            )
            return {"status": "error", "error": str(exc)}
        return report
    finally:
        flush()  # the instance may be frozen once the handler returns
