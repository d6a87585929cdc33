"""`Relay`: claim due outbox events, publish them in parallel, settle each one.

One `run()` drains: it keeps claiming until no event is due, its time budget runs out
(`relay.run.ending`), or the channel is broken (the circuit breaker, `relay.publish.breaker`).
Every event's life is `PENDING -> PROCESSING -> PROCESSED | PENDING (retry) | FAILED`, and
every arrow is a conditional write (see `relay.store`). Every comparison with a server
timestamp uses Firestore's clock (`firestore_outbox.firestore.clock`), never this machine's.
The drain is `relay.run.partition_drain` (partition leases) or `relay.run.event_drain`
(`RELAY_LEASES=event`); the pipeline it works with is opened by `relay.publish.pool`.
"""

from __future__ import annotations

import random
import threading
import uuid
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
from firestore_outbox.relay.heartbeat import Heartbeat
from firestore_outbox.relay.lease import OnSettled
from firestore_outbox.relay.partition_settings import LeaseMode
from firestore_outbox.relay.pipeline import Pipeline
from firestore_outbox.relay.publish.attempts import Attempts
from firestore_outbox.relay.publish.pool import open_pipeline, ramp_governor
from firestore_outbox.relay.ramp import RampGovernor
from firestore_outbox.relay.run.ending import Ending, budget_of, too_short
from firestore_outbox.relay.run.event_drain import deliver_batch, drain_due
from firestore_outbox.relay.run.mode_records import ModeRecords
from firestore_outbox.relay.run.partition_drain import PartitionDrain
from firestore_outbox.relay.store import LeaseStore
from firestore_outbox.relay.summary import Count, RunSummary, StopReason, Tally
from firestore_outbox.relay.transitions import bounded_instance_id

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.firestore.raw import DueDocument
    from firestore_outbox.relay.fan_out import FanOut
    from firestore_outbox.relay.publish.breaker import Breaker

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
        budget = budget_of(self.config, time_budget, budget_source)
        instance = bounded_instance_id(instance_id or uuid.uuid4().hex)
        if partitions is not None:
            partitions = checked_partitions(partitions, self.config.partitions.count)
        envelope = budget.envelope(self.config)
        if (summary := too_short(budget, self.config, instance)) is not None:
            self.heartbeat.beat(summary.to_json(), until=envelope)  # the watchdog hears of it
            return summary
        ending = Ending(budget, instance, stop)
        with self._store.bounded(envelope):
            self._run(ending, fan_out=fan_out, partitions=partitions, hand_off=hand_off)
        summary = ending.summary()
        # Never raises; at most every few seconds; within the envelope, after the run.
        self.heartbeat.beat(summary.to_json(), until=envelope)
        return summary

    def _run(
        self,
        ending: Ending,
        *,
        fan_out: bool,
        partitions: Collection[int] | None,
        hand_off: Callable[[frozenset[int]], object] | None,
    ) -> None:
        """Drain with the configured lease mode; `ending` hears how the run went."""
        deadline, instance, tally = ending.budget.deadline, ending.instance, ending.tally
        mode = self.config.partitions.leases
        breaker: Breaker | None = None

        def take_mode() -> bool:  # False: a relay of the other lease mode may be draining
            return ending.take_mode(self._mode, mode, self.config.lock_timeout_seconds)

        try:
            if mode is LeaseMode.PARTITION:
                breaker = self._drain_partitions(ending, fan_out, partitions, hand_off, take_mode)
            elif take_mode():
                with self.pipeline(deadline, instance, tally) as pipeline:
                    ending.stopped_by = drain_due(self, pipeline)
                breaker = pipeline.breaker
            else:
                return
            if not tally[Count.LEASED] and ending.stopped_by is StopReason.DRAINED:
                self._ramp = None  # idle: the next backlog ramps up from the start again
            if breaker is not None:
                ending.broken(breaker)
        except ReadBudgetSpent:  # a read failed after the budget: out of time, not broken
            ending.stopped_by = StopReason.BUDGET
        except google_exceptions.GoogleAPIError as exc:
            ending.failed(exc)
        ending.leave(self._mode, nudged=partitions is not None)

    def _drain_partitions(
        self,
        ending: Ending,
        fan_out: bool,
        partitions: Collection[int] | None,
        hand_off: Callable[[frozenset[int]], object] | None,
        take_mode: Callable[[], bool],
    ) -> Breaker | None:
        """A run with partition leases: the survey first, then, if it saw open events (or
        for a nudge), the pipeline and the drain. Returns the pipeline's breaker, if any."""
        deadline, tally = ending.budget.deadline, ending.tally
        self._leases = self._leases or self.partition_leases()
        drain = PartitionDrain(
            self._store,
            self._leases,
            self._attempts,
            self.config,
            self._rng,
            stop=ending.stop,
            fan_out=self._fan_out() if fan_out and partitions is None else None,
            take_mode=take_mode,
            only=partitions,
            hand_off=hand_off,
        )
        looked = drain.survey(tally, until=deadline)
        if looked is not None and not looked.open_events:
            ending.stopped_by = StopReason.DRAINED  # idle, in one read: no pool, no settler
            return None
        with self.pipeline(
            deadline, ending.instance, tally, on_settled=drain.aggregates.settled
        ) as pipeline:
            ending.stopped_by = drain.run(pipeline, looked)
        return pipeline.breaker

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
