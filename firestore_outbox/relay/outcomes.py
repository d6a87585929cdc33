"""How the relay counts and reports write outcomes it does not simply apply (shared by
claiming, reading and settling), and which failures of a whole call are worth another try
(the pause before it: `relay.backoff.backoff_pause`)."""

from __future__ import annotations

import logging

from google.api_core import exceptions as google_exceptions

from firestore_outbox.firestore.cas import Written
from firestore_outbox.observability.logs import log_event
from firestore_outbox.relay.summary import Count, Tally

logger = logging.getLogger("firestore_outbox.relay")

# Failures of a whole call worth another try: Firestore is busy or briefly unreachable, or
# gave up on the call (CANCELLED, as single writes already count it: the emulator answers a
# call made just after a listen stream was cancelled so, the write landed or not, and the
# settle's resend is read back). A call the relay cancels itself is on a closed channel,
# whose next send raises at once.
TRANSIENT_ERRORS = (
    google_exceptions.Cancelled,
    google_exceptions.ServiceUnavailable,
    google_exceptions.DeadlineExceeded,
    google_exceptions.Aborted,
    google_exceptions.InternalServerError,
    google_exceptions.ResourceExhausted,
    google_exceptions.RetryError,
)


def count_refused(tally: Tally, event_id: str, attempt: int, written: Written, kind: str) -> None:
    """Count and log a write Firestore refused for itself: its event was parked as FAILED
    when `written.update_time` is set, else it was left as it was."""
    parked = written.update_time is not None
    tally[Count.REFUSED] += 1
    tally[Count.FAILED] += parked
    log_event(
        logger,
        logging.ERROR,
        "relay.write_refused",
        f"Firestore refused the {kind} write of event {event_id}: {written.reason}; "
        + ("parked as FAILED" if parked else "left as it was"),
        eventId=event_id,
        attempt=attempt,
        outcome=kind,
        error=written.reason,
        parked=parked,
    )
