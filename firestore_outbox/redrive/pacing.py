"""A job's pace (`Pacer`) and its waits, which watch the job (`Watch`).

A runner waits between sends (its rate) and, at a slow rate, until a fresh lease covers its
next send. Every wait watches the job: the runner knows the job is still RUNNING and its own
as of at most `WATCH_SECONDS` ago (its last successful conditional write, or a read of the
job), so a pause or a cancel reaches a waiting runner within a second at any rate, and the
next event is not sent. A runner that does not wait (its next send is due) reads nothing: the
progress write after a send, once a second, watches the job then; a job slower than one send
a second reads its document once a second while it waits.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firestore_outbox.redrive.job import JobState

if TYPE_CHECKING:
    from firestore_outbox.redrive.jobs import JobLease, JobStore

WATCH_SECONDS = 1.0


@dataclass
class Pacer:
    """At most `rate` sends a second over the run: send n (from 0) is due `n / rate` seconds
    after send 0."""

    rate: float
    started: float | None = None
    sent: int = 0

    def due(self) -> float:
        """When (monotonic) the next send may go."""
        if self.started is None:
            self.started = time.monotonic()
        return self.started + self.sent / self.rate


class Watch:
    """Waits of the runner holding `lease` that end early when the job is no longer its to
    send (paused, cancelled, taken over)."""

    def __init__(self, jobs: JobStore, lease: JobLease) -> None:
        self._jobs = jobs
        self._lease = lease
        self._read_at = lease.sent_at

    def confirmed_at(self) -> float:
        """When (monotonic) the job was last known RUNNING under this lease: its last
        conditional write was sent, or a read of it answered."""
        return max(self._read_at, self._lease.sent_at)

    def sleep_until(self, moment: float) -> bool:
        """Sleep until `moment` (monotonic); False as soon as the job is seen not to be this
        runner's to send any more. A wait returns with the job confirmed within the last
        `WATCH_SECONDS`; no wait (`moment` past) returns at once."""
        while True:
            now = time.monotonic()
            if now >= moment:  # (not waiting: the progress write after the send watches)
                return True
            if now - self.confirmed_at() >= WATCH_SECONDS:
                asked = time.monotonic()
                job = self._jobs.get(self._lease.job.job_id)
                if job.state is not JobState.RUNNING or job.lease_owner != self._lease.owner:
                    return False
                self._read_at = asked
                continue
            time.sleep(min(moment, self.confirmed_at() + WATCH_SECONDS) - now)
