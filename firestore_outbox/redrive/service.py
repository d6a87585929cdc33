"""`Redrive`: the re-drive jobs of one outbox, wired from the relay's settings.

The jobs live in `{OUTBOX_COLLECTION}_redrive`; a job's lease lasts the relay's lock timeout
(`RELAY_LOCK_TIMEOUT_SECONDS`); its events go with the relay's source, signer and timeouts,
from every partition events are stored in (`RELAY_PARTITIONS` as it was when the job was made
is recorded, for the record). A selection that selects nothing makes no job
(`NothingSelected`), and a budget that fits no attempt is refused, as the relay's is.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from firestore_outbox.errors import InvalidInput
from firestore_outbox.firestore.outbox_collections import OutboxCollections
from firestore_outbox.redrive.job import Job, JobState
from firestore_outbox.redrive.jobs import JobStore
from firestore_outbox.redrive.preview import Preview, preview
from firestore_outbox.redrive.runner import FLUSH_SECONDS, RunReport, run_job
from firestore_outbox.redrive.targets import publisher_for_target
from firestore_outbox.relay.summary import stalled

if TYPE_CHECKING:
    from google.cloud.firestore import Client, CollectionReference

    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.redrive.selection import Selection
    from firestore_outbox.relay.config import RelayConfig

MAX_RATE = 10_000.0


class NothingSelected(InvalidInput):
    """A job's selection selects no event now: no job is written."""


def jobs_collection(outbox_collection: str) -> str:
    """Where the re-drive jobs of the outbox `outbox_collection` live (`OutboxCollections`)."""
    return OutboxCollections.of(outbox_collection).redrive


def check_rate(rate: float) -> float:
    """`rate` (events a second) if usable, else `InvalidInput` naming it."""
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate <= MAX_RATE:
        raise InvalidInput(f"rate must be events per second, above 0 and at most {MAX_RATE:g}")
    return float(rate)


def runner_name() -> str:
    """Who runs or made a job, as a default: this host and process."""
    return f"{socket.gethostname()}:{os.getpid()}"


def start_job(
    jobs: JobStore,
    events: CollectionReference,
    selection: Selection,
    *,
    partitions: int,
    target: Mapping[str, Any],
    rate: float,
    created_by: str,
) -> Job:
    """A RUNNING job of `selection` (over `partitions`) to `target` at `rate` events a second,
    `selected` counted now (`NothingSelected` when none: nothing written). A selection open
    at its end stops at now: events committed later are live, not the job's."""
    rate = check_rate(rate)
    if not created_by.strip():
        raise InvalidInput("created by must name who starts the job")
    if selection.until is None:
        now = datetime.datetime.now(datetime.timezone.utc)
        selection = dataclasses.replace(selection, until=max(now, selection.since or now))
    selected = preview(events, selection, partitions, timeout=jobs.timeout).count
    if not selected:
        raise NothingSelected(f"no event is selected ({selection.describe()}): no job written")
    return jobs.create(
        selection,
        target=target,
        rate=rate,
        partitions=partitions,
        created_by=created_by,
        selected=selected,
    )


class Redrive:
    """Preview, create, run and list the re-drive jobs of one outbox."""

    def __init__(self, db: Client, settings: Settings, config: RelayConfig) -> None:
        self._config = config
        self._events = db.collection(settings.outbox_collection)
        self._timeout = config.firestore_timeout_seconds  # the relay's, as it runs there
        self._source = config.source_for(db.project, settings.database, settings.outbox_collection)
        self.jobs = JobStore(
            db,
            config.collections(settings.outbox_collection).redrive,
            lease_seconds=config.lock_timeout_seconds,
            timeout=self._timeout,
        )

    def preview(self, selection: Selection) -> Preview:
        """What a job of `selection` would send now (the dry run): nothing written."""
        return preview(
            self._events, selection, self._config.partitions.count, timeout=self._timeout
        )

    def start(
        self, selection: Selection, *, target: Mapping[str, Any], rate: float, created_by: str
    ) -> Job:
        """A RUNNING job of `selection` to `target` at `rate` events a second."""
        return start_job(
            self.jobs,
            self._events,
            selection,
            partitions=self._config.partitions.count,
            target=target,
            rate=rate,
            created_by=created_by,
        )

    def check_budget(self, budget_seconds: float | None, source: str = "budget") -> None:
        """`InvalidInput` when `budget_seconds` (named `source`) fits no attempt, as the relay
        refuses such a budget (`RelayConfig.attempt_seconds`); None: no budget."""
        attempt = self._config.attempt_seconds
        if budget_seconds is not None and not budget_seconds >= attempt:
            raise InvalidInput(stalled(budget_seconds, attempt, source))

    def run(
        self,
        job_id: str,
        *,
        owner: str | None = None,
        budget_seconds: float | None = None,
        flush_seconds: float = FLUSH_SECONDS,
    ) -> RunReport:
        """Run one job until it ends, is paused or cancelled, or `budget_seconds` pass; a
        budget that fits no attempt is `InvalidInput`, before the job is touched."""
        self.check_budget(budget_seconds)
        return run_job(
            self.jobs,
            self._events,
            job_id,
            owner=owner or runner_name(),
            source=self._source,
            publisher_for=lambda target: publisher_for_target(target, self._config),
            attempt_seconds=self._config.attempt_seconds,
            budget_seconds=budget_seconds,
            flush_seconds=flush_seconds,
        )

    def run_due(self, budget_seconds: float, *, owner: str | None = None) -> list[RunReport]:
        """Run the RUNNING jobs whose lease is free, one after another, within
        `budget_seconds` (a Function Compute invocation's time left after the relay's run);
        a job another runner holds answers why it did not start."""
        stop_at = time.monotonic() + budget_seconds
        reports = []
        for job in self.jobs.runnable():
            left = stop_at - time.monotonic()
            if left < self._config.attempt_seconds:
                break
            if job.state is JobState.RUNNING:
                reports.append(self.run(job.job_id, owner=owner, budget_seconds=left))
        return reports
