"""Re-drive job documents (collection `{OUTBOX_COLLECTION}_redrive`, id = the job id) and
the conditional writes on them.

    RUNNING --pause--> PAUSED --resume--> RUNNING --every event passed--> DONE
       \\------------------cancel (from RUNNING or PAUSED)----------------> CANCELLED

A runner holds a job by its lease (`leaseOwner`, `leasedAt` on Firestore's clock), like a
relay holds a partition: it takes the lease only when none is held or the holder's is older
than the lease time (measured as the read time minus `leasedAt`, both Firestore's), with a
write conditional on the update time it read, so of two runners one wins. Every later write of
the holder (its cursor, its counts, renewing the lease) is conditional on the update time of
its own last write: a pause or a cancel in between makes it fail, the holder reads the job
again, records its progress on the new version and stops. A runner publishes only while its
lease, counted from when it sent its last write, has time left (`JobLease.valid_for`), and a
taker waits for the lease to be older than that on Firestore's clock: two runners never send
the job's events at the same time.
"""

from __future__ import annotations

import datetime
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.cloud.firestore import SERVER_TIMESTAMP, FieldFilter

from firestore_outbox.errors import InvalidInput, OutboxError
from firestore_outbox.firestore.deadline import bounded_retry
from firestore_outbox.firestore.limits import check_document_id
from firestore_outbox.redrive.job import COUNTS, FINAL, MOVES, Job, JobNotFound, JobState
from firestore_outbox.redrive.selection import Selection

if TYPE_CHECKING:
    from google.cloud.firestore import Client


@dataclass
class JobLease:
    """A job held by one runner: the version it last wrote, and when (monotonic) it sent
    that write, from which its lease runs."""

    job: Job
    owner: str
    sent_at: float
    lease_seconds: float

    def valid_for(self) -> float:
        """Seconds the lease surely has left on this runner's clock."""
        return self.sent_at + self.lease_seconds - time.monotonic()


class JobStore:
    """The job documents of one outbox; `lease_seconds` is the lock timeout, `timeout` the
    Firestore deadline every call keeps (its retries included)."""

    def __init__(
        self, db: Client, collection: str, *, lease_seconds: float, timeout: float
    ) -> None:
        self._db = db
        self.collection = db.collection(collection)
        self.lease_seconds = lease_seconds
        self.timeout = timeout

    def create(
        self,
        selection: Selection,
        *,
        target: Mapping[str, Any],
        rate: float,
        partitions: int,
        created_by: str,
        selected: int,
    ) -> Job:
        """A new RUNNING job; its id is sortable by creation time."""
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        ref = self.collection.document(f"{stamp}-{secrets.token_hex(3)}")
        ref.create(
            {
                "state": JobState.RUNNING.value,
                "filter": selection.to_document(),
                "target": dict(target),
                "ratePerSecond": rate,
                "partitions": partitions,
                "createdBy": created_by,
                "createdAt": SERVER_TIMESTAMP,
                "updatedAt": SERVER_TIMESTAMP,
                "cursor": None,
                "counts": {**dict.fromkeys(COUNTS, 0), "selected": selected},
                "leaseOwner": None,
                "leasedAt": None,
            },
            **self._bounded(),
        )
        return self.get(ref.id)

    def get(self, job_id: str) -> Job:
        problem = check_document_id(job_id)
        if problem:
            raise InvalidInput(f"JOB_ID {problem}")
        snapshot = self.collection.document(job_id).get(**self._bounded())
        if not snapshot.exists:
            raise JobNotFound(f"no re-drive job {job_id}")
        return Job.from_snapshot(snapshot)

    def recent(self, limit: int = 20) -> list[Job]:
        """The newest `limit` jobs, newest first (a single-field index: no composite)."""
        query = self.collection.order_by("createdAt", direction="DESCENDING").limit(limit)
        return [Job.from_snapshot(s) for s in query.stream(**self._bounded())]

    def runnable(self, limit: int = 10) -> list[Job]:
        """RUNNING jobs, oldest first, whose lease is free or abandoned as last read."""
        running = FieldFilter("state", "==", JobState.RUNNING.value)
        query = self.collection.where(filter=running).limit(limit)
        jobs = [Job.from_snapshot(s) for s in query.stream(**self._bounded())]
        return sorted(jobs, key=lambda job: job.job_id)

    def move(self, job_id: str, command: str) -> Job:
        """`pause`, `resume` or `cancel` a job; `InvalidInput` when its state forbids it."""
        state, sources = MOVES[command]
        for _ in range(5):
            job = self.get(job_id)
            if job.state not in sources:
                raise InvalidInput(f"job {job_id} is {job.state.value}: it cannot {command}")
            fields: dict[str, Any] = {"state": state.value, "updatedAt": SERVER_TIMESTAMP}
            if state in FINAL:
                fields["finishedAt"] = SERVER_TIMESTAMP
            if self._write(job, fields):
                return self.get(job_id)
        raise OutboxError(f"job {job_id} kept changing: try again")

    def take(self, job_id: str, owner: str) -> JobLease | str:
        """The job's lease for `owner`, or why not (not RUNNING, or held)."""
        ref = self.collection.document(job_id)
        snapshot = ref.get(**self._bounded())
        if not snapshot.exists:
            raise JobNotFound(f"no re-drive job {job_id}")
        job = Job.from_snapshot(snapshot)
        if job.state is not JobState.RUNNING:
            return f"the job is {job.state.value}"
        if job.lease_owner and job.leased_at is not None and snapshot.read_time is not None:
            age = (snapshot.read_time - job.leased_at).total_seconds()
            if age < self.lease_seconds:
                return f"held by {job.lease_owner} ({age:.0f} s into its lease)"
        sent_at = time.monotonic()
        fields = {"leaseOwner": owner, "leasedAt": SERVER_TIMESTAMP, "updatedAt": SERVER_TIMESTAMP}
        written = self._write(job, fields)
        if written is None:
            return "another runner took it first"
        held = replace(job, lease_owner=owner, update_time=written)
        return JobLease(held, owner, sent_at, self.lease_seconds)

    def record(self, lease: JobLease, fields: Mapping[str, Any], *, release: bool = False) -> bool:
        """Write the holder's progress `fields` (and renew, or with `release` give back, the
        lease); False when the job is no longer RUNNING under this lease (paused, cancelled,
        taken): its progress is still recorded if the lease is still this runner's."""
        lease_fields = (
            {"leaseOwner": None, "leasedAt": None} if release else {"leasedAt": SERVER_TIMESTAMP}
        )
        fields = {**fields, **lease_fields, "updatedAt": SERVER_TIMESTAMP}
        job = lease.job
        for _ in range(5):
            sent_at = time.monotonic()
            written = self._write(job, fields)
            if written is not None:
                lease.job, lease.sent_at = replace(job, update_time=written), sent_at
                return job.state is JobState.RUNNING and not release
            job = self.get(job.job_id)  # changed since: by an operator, or taken over
            if job.lease_owner != lease.owner:
                return False
            if job.state is not JobState.RUNNING:  # an operator's state stands
                kept = {k: v for k, v in fields.items() if k not in ("state", "finishedAt")}
                fields = {**kept, "leaseOwner": None, "leasedAt": None}
        raise OutboxError(f"job {job.job_id} kept changing under its runner")

    def _bounded(self) -> dict[str, Any]:
        """Every call ends within the timeout, its retries included."""
        return {"timeout": self.timeout, "retry": bounded_retry(self.timeout)}

    def _write(self, job: Job, fields: Mapping[str, Any]) -> datetime.datetime | None:
        """`fields` written if `job` is unchanged since read; the new update time, or None."""
        option = self._db.write_option(last_update_time=job.update_time)
        try:
            result = self.collection.document(job.job_id).update(
                dict(fields), option=option, **self._bounded()
            )
        except (google_exceptions.FailedPrecondition, google_exceptions.NotFound):
            return None
        return result.update_time  # type: ignore[no-any-return]
