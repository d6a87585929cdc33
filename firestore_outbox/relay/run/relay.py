"""`Relay`: lease due events in batches, publish them in parallel, settle each one.

One `run()` drains: it keeps leasing batches until no event is due, its time budget runs
out, or the channel is broken (the circuit breaker, `firestore_outbox.relay.publish.breaker`). Every event's
life is `PENDING -> PROCESSING -> PROCESSED | PENDING (retry) | FAILED`, and every arrow is a
conditional write (see `firestore_outbox.relay.store`). Every comparison with a server timestamp
uses Firestore's clock (`firestore_outbox.firestore.clock`), never this machine's. The pipeline a
drain works with is opened and fed by `firestore_outbox.relay.per_event.delivering`; the run's
summary is `firestore_outbox.relay.summary`'s.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from google.api_core import exceptions as google_exceptions

from firestore_outbox.firestore.reads import ReadBudgetSpent
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import checked_partitions
from firestore_outbox.publishers.base import Publisher
from firestore_outbox.publishers.registry import publisher_for
from firestore_outbox.relay.claim.partition_claims import PartitionLeases
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.relay.lease import OnSettled
from firestore_outbox.relay.partition_settings import LeaseMode
from firestore_outbox.relay.publish.attempts import Attempts
from firestore_outbox.relay.publish.pipeline import Pipeline, open_pipeline, ramp_governor
from firestore_outbox.relay.ramp import RampGovernor
from firestore_outbox.relay.run.event_drain import deliver_batch, drain_due
from firestore_outbox.relay.heartbeat import Heartbeat
from firestore_outbox.relay.run.mode_records import ModeRecords, ModeTaken
from firestore_outbox.relay.run.partition_drain import PartitionDrain
from firestore_outbox.relay.store import LeaseStore
from firestore_outbox.relay.summary import (
    Count,
    RunStatus,
    RunSummary,
    StopReason,
    Tally,
    finish_summary,
    firestore_error,
    stalled,
    starved,
    waiting_for_mode,
)
from firestore_outbox.relay.transitions import bounded_instance_id

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.firestore.raw import DueDocument
    from firestore_outbox.relay.fan_out import FanOut

__all__ = ["Pipeline", "Relay"]


class Relay:
    """Delivers due outbox events through `publisher` (by default HTTP to the downstream).

    A relay holds its publisher's connections (keep-alive sockets, AMQP links, SDK pools)
    between runs; `close()`, or leaving `with Relay(...) as relay:`, closes them."""

    def __init__(
        self,
        db: Client,
        settings: Settings,
        config: RelayConfig,
        *,
        publisher: Publisher | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._store = LeaseStore(
            db,
            settings.outbox_collection,
            timeout=config.firestore_timeout_seconds,
            park_holds=config.partitions.holds_failed,
        )
        source = config.source_for(db.project, settings.database, settings.outbox_collection)
        self._source = source  # the CloudEvents `source` of every delivery
        self._attempts = Attempts(
            publisher or publisher_for(config.publisher, config.publisher_options()), source, config
        )
        self._rng = rng or random.Random()
        self._db = db
        self.collections = config.collections(settings.outbox_collection)
        self._fan_out_client: FanOut | None = None
        self._ramp: RampGovernor | None = None
        # One for every run: the next run claims by what the last one wrote, unread.
        self._leases: PartitionLeases | None = None
        self._mode = ModeRecords(db, self._store, self.collections.partition_modes)
        # What the watchdog and the console read (`firestore_outbox.relay.heartbeat`).
        self.heartbeat = Heartbeat(
            db,
            self.collections.health,
            every_seconds=config.heartbeat_seconds,
            timeout=config.firestore_timeout_seconds,
        )

    def _fan_out(self) -> FanOut | None:
        if not self.config.fan_out.max:
            return None
        if self._fan_out_client is None:
            from firestore_outbox.relay.fan_out import (
                FanOut,  # its Function Compute client: only if used
            )

            self._fan_out_client = FanOut(self.config.fan_out, self._source)
        return self._fan_out_client

    def _ramp_for(self, tally: Tally) -> RampGovernor | None:
        """RELAY_RAMP=on: the governor of the drain under way, its ramp started by the first
        run that found work (`ramp_governor`)."""
        if not self.config.ramp.enabled:
            return None
        if self._ramp is None:
            self._ramp = ramp_governor(self.config)
        return self._ramp

    def partition_leases(self) -> PartitionLeases:
        """The partition leases this relay claims (`RELAY_LEASES=partition`)."""
        return PartitionLeases(
            self._db,
            self._store,
            self.collections.partitions,
            count=self.config.partitions.count,
            duration=self.config.lock_timeout_seconds,
        )

    def run(
        self,
        *,
        time_budget: float | None = None,
        instance_id: str | None = None,
        stop: threading.Event | None = None,
        fan_out: bool = False,
        partitions: Collection[int] | None = None,
        hand_off: Callable[[frozenset[int]], object] | None = None,
        budget_source: str | None = None,
    ) -> RunSummary:
        """Drain due events for at most `time_budget` seconds (default and ceiling: the
        configured budget), or until `stop` is set (partition leases only: follow mode).
        A budget too short for one attempt (`RelayConfig.attempt_seconds`) runs nothing:
        `status: error`, `stoppedBy: budgetTooShort`, the `error` naming the variables
        (`budget_source`: where `time_budget` came from); a run whose budget ran out before
        it published anything is `status: error` too (`stoppedBy: budget`; not with `stop`).
        `fan_out`: may start more invocations for a large backlog
        (`firestore_outbox.relay.fan_out`). `partitions`: a nudge's (`firestore_outbox.nudge`);
        only they are claimed (partition leases; under event leases the run drains as usual).
        `hand_off`: with `partitions`, how the run nudges the partitions its re-check after a
        release finds an event in (`recheck`), instead of claiming them again.
        Returns the summary; Firestore errors end the run with `status: error`, and whatever
        was leased and not settled is taken back later. A partition that is no whole number
        in `[0, RELAY_PARTITIONS)` is `InvalidInput`, before anything is read."""
        started = time.monotonic()
        budget = self.config.time_budget_seconds
        if time_budget is not None and time_budget < budget:
            budget = max(0.0, time_budget)
        else:
            budget_source = "RELAY_TIME_BUDGET_SECONDS"
        deadline = started + budget
        instance = bounded_instance_id(instance_id or uuid.uuid4().hex)
        if partitions is not None:
            partitions = checked_partitions(partitions, self.config.partitions.count)
        # Whatever the run does past its budget (settles, releases, counts) ends within
        # budget + Firestore timeout, the envelope the function's timeout is sized for.
        envelope = deadline + self.config.firestore_timeout_seconds
        if budget < self.config.attempt_seconds:  # no attempt could end in time: try none
            summary = finish_summary(
                Counter(),
                instance,
                started,
                stopped_by=StopReason.BUDGET_TOO_SHORT,
                error=stalled(budget, self.config.attempt_seconds, budget_source or "time_budget"),
                status=RunStatus.ERROR,
            )
            self.heartbeat.beat(summary.to_json(), until=envelope)  # the watchdog hears of it
            return summary
        with self._store.bounded(envelope):
            summary = self._run(
                started,
                budget,
                instance,
                stop=stop,
                fan_out=fan_out,
                partitions=partitions,
                hand_off=hand_off,
            )
        # Never raises; at most every few seconds; within the envelope, after the run.
        self.heartbeat.beat(summary.to_json(), until=envelope)
        return summary

    def _run(
        self,
        started: float,
        budget: float,
        instance: str,
        *,
        stop: threading.Event | None,
        fan_out: bool,
        partitions: Collection[int] | None,
        hand_off: Callable[[frozenset[int]], object] | None,
    ) -> RunSummary:
        deadline = started + budget
        tally: Tally = Counter()
        stopped_by = StopReason.DRAINED
        error: str | None = None
        channel: str | None = None
        channel_error: str | None = None
        mode = self.config.partitions.leases
        taken: list[ModeTaken] = []

        def take_mode() -> bool:  # False: a relay of the other lease mode may be draining
            taken.append(self._mode.take(mode, budget + self.config.lock_timeout_seconds))
            waiting, until = taken[-1].waiting_for, taken[-1].until
            if waiting is not None and until is not None:
                waiting_for_mode(tally, instance, waiting, until)
            return waiting is None

        def summary() -> RunSummary:
            waited = taken[-1] if taken and taken[-1].waiting_for is not None else None
            if starved(tally, stopped_by, error, stop):
                return finish_summary(
                    tally,
                    instance,
                    started,
                    stopped_by=stopped_by,
                    error="the time budget ran out before anything was published",
                    status=RunStatus.ERROR,
                )
            return finish_summary(
                tally,
                instance,
                started,
                stopped_by=StopReason.MODE if waited else stopped_by,
                error=error,
                channel=channel,
                channel_error=channel_error,
                waiting_for=waited.waiting_for if waited else None,
                mode_until=waited.until if waited else None,
            )

        try:
            if mode is LeaseMode.PARTITION:
                self._leases = self._leases or self.partition_leases()
                drain = PartitionDrain(
                    self._store,
                    self._leases,
                    self._attempts,
                    self.config,
                    self._rng,
                    stop=stop,
                    fan_out=self._fan_out() if fan_out and partitions is None else None,
                    take_mode=take_mode,
                    only=partitions,
                    hand_off=hand_off,
                )
                with self.pipeline(
                    deadline, instance, tally, on_settled=drain.aggregates.settled
                ) as pipeline:
                    stopped_by = drain.run(pipeline)
            elif take_mode():
                with self.pipeline(deadline, instance, tally) as pipeline:
                    stopped_by = drain_due(self, pipeline)
            else:
                return summary()
            if not tally[Count.LEASED] and stopped_by is StopReason.DRAINED:
                self._ramp = None  # idle: the next backlog ramps up from the start again
            if pipeline.breaker.error_class:  # also when it opened after the last lease
                stopped_by, channel = StopReason.CHANNEL, pipeline.breaker.error_class
                channel_error = pipeline.breaker.error
        except ReadBudgetSpent:  # a read failed after the budget: out of time, not broken
            stopped_by = StopReason.BUDGET
        except google_exceptions.GoogleAPIError as exc:
            error = firestore_error(exc, instance)
        if taken and taken[-1].waiting_for is None:
            # A clean run released its partitions and settled what it leased: it holds nothing.
            self._mode.leave(
                clean=error is None and not tally[Count.UNSETTLED],
                shorten=partitions is not None,  # a nudged run: maybe a cold instance's last
            )
        return summary()

    @contextmanager
    def pipeline(
        self,
        deadline: float,
        instance: str,
        tally: Tally,
        *,
        on_settled: OnSettled | None = None,
    ) -> Iterator[Pipeline]:
        """A publishing pool and a settler for `deliver()`. Leaving waits until everything
        delivered is settled, counts into `tally`, and raises a Firestore error the settler
        met. Settles are retried until `deadline` (monotonic); `on_settled` hears how each
        one ended."""
        with open_pipeline(
            self._store,
            self.config,
            self._rng,
            deadline=deadline,
            instance=instance,
            tally=tally,
            ramp=self._ramp_for(tally),
            on_settled=on_settled,
        ) as pipeline:
            yield pipeline

    def deliver(self, pipeline: Pipeline, snapshots: Sequence[DueDocument]) -> None:
        """Lease the events `snapshots` show (each only if unchanged since) and hand every
        lease to the pool; results go to the settler as they arrive."""
        deliver_batch(self._store, self._attempts, self.config, pipeline, snapshots)

    @property
    def db(self) -> Client:
        """The Firestore client the relay was made with."""
        return self._db

    @property
    def store(self) -> LeaseStore:
        """The relay's Firestore side: its queries, conditional writes and server clock."""
        return self._store

    def close(self) -> None:
        """Close the publisher (one given to the relay too) and the fan-out client: their
        connections end now, not when the garbage collector gets to them. A delivery still
        in flight finishes first; the relay must not be run again."""
        fan_out, self._fan_out_client = self._fan_out_client, None
        if fan_out is not None:
            fan_out.close()
        self._attempts.close()
        self._mode.close()  # its lease-mode record, when no run left a lease behind

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
