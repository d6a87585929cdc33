"""What one `Relay.run()` reports: the counts its summary always carries, and how the summary
is finished (or marked as stopped by a Firestore error) and recorded as metrics.

The counts are named once, here: follow mode's summary (`firestore_outbox.relay.follow.progress`)
carries the same ones, so a counter added here shows up there too.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from typing import Any

from google.api_core import exceptions as google_exceptions

from firestore_outbox.observability.logs import log_event
from firestore_outbox.observability.metrics import record_run

# The relay core's name, as before this module was split from it: log queries filter on it.
logger = logging.getLogger("firestore_outbox.relay.core")

# Counted in every run's summary, zeros included.
RUN_COUNTS = (
    "processed",
    "failed",
    "retried",
    "reclaimed",
    "released",
    "poisoned",
    "contended",
    "lostLeases",
    "refused",
    "unsettled",
    "unscheduled",
    "leased",
    "batches",
    "lagMs",
    "healed",
    "partitionsClaimed",
    "fannedOut",
    "modeWaits",
)


def stopped_by_firestore(
    summary: dict[str, Any], exc: google_exceptions.GoogleAPIError, instance: str
) -> None:
    """Log the Firestore error that ended run `instance` and mark `summary` as ended by it."""
    log_event(
        logger,
        logging.ERROR,
        "relay.firestore_error",
        f"relay {instance} stopped: Firestore error: {exc}",
        instanceId=instance,
        errorClass=type(exc).__name__,
    )
    summary.update(status="error", stoppedBy="error", error=f"Firestore: {exc}")


def waiting_for_mode(
    summary: dict[str, Any], tally: Counter[str], instance: str, mode: str, until: Any
) -> None:
    """Log that run `instance` drained nothing because relays of lease mode `mode` may still
    hold leases until `until`, and say so in `summary`
    (`firestore_outbox.relay.partitioned.lease_mode`)."""
    log_event(
        logger,
        logging.WARNING,
        "relay.mode_wait",
        f"relay {instance} waits: relays with RELAY_LEASES={mode} may hold leases until "
        f"{until.isoformat()}; it drains nothing before then",
        instanceId=instance,
        waitingFor=mode,
        modeUntil=until.isoformat(),
    )
    tally["modeWaits"] += 1
    summary.update(stoppedBy="mode", waitingFor=mode, modeUntil=until.isoformat())


def finish_summary(
    summary: dict[str, Any], tally: Counter[str], instance: str, started: float
) -> dict[str, Any]:
    """`summary` with every one of `RUN_COUNTS` from `tally`, the run's `instanceId` and its
    `durationMs` since `started` (monotonic), recorded as metrics
    (`firestore_outbox.observability.metrics`)."""
    summary.update(
        {name: tally[name] for name in RUN_COUNTS},
        instanceId=instance,
        durationMs=round((time.monotonic() - started) * 1000),
    )
    record_run(summary)
    return summary
