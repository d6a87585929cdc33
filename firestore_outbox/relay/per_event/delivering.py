"""Per-event delivery: opening the pipeline one drain works with
(`firestore_outbox.relay.pipeline`),
feeding it a batch of due events to lease and publish, and the ramp governor that paces it.

`Relay.pipeline()` and `Relay.deliver()` are these, bound to a relay's store, configuration
and publisher; the per-event drain (`firestore_outbox.relay.per_event.drain`) and follow mode call
them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import TYPE_CHECKING

from firestore_outbox.relay.attempts import Attempts
from firestore_outbox.relay.breaker import Breaker
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.relay.held_event import OnSettled
from firestore_outbox.relay.per_event.drain import lease_batch
from firestore_outbox.relay.pipeline import InFlight, Pipeline, hand_to
from firestore_outbox.relay.ramp import RampGovernor, RampSchedule
from firestore_outbox.relay.settling.settler import Settler
from firestore_outbox.relay.store import LeaseStore
from firestore_outbox.relay.summary import Count, Tally

if TYPE_CHECKING:
    from firestore_outbox.firestore.raw import DueDocument


def ramp_governor(config: RelayConfig) -> RampGovernor:
    """A governor for `RELAY_RAMP=on` whose ramp starts now. The invocations a fan-out
    starts may run at once, so each takes an equal share of the rule's rate."""
    schedule = RampSchedule(
        started_at=time.time(),
        initial_rate=float(config.ramp.rate),
        step_seconds=config.ramp.step_seconds,
    )
    return RampGovernor(schedule, share=1 / (1 + config.fan_out.max))


@contextmanager
def open_pipeline(
    store: LeaseStore,
    config: RelayConfig,
    rng: random.Random,
    *,
    deadline: float,
    instance: str,
    tally: Tally,
    ramp: RampGovernor | None,
    on_settled: OnSettled | None = None,
) -> Iterator[Pipeline]:
    """A publishing pool and a settler: see `Relay.pipeline()`. `ramp` (if any) paces the
    settler's writes and the drain's reads."""
    in_flight = InFlight()
    settler = Settler(
        store,
        config,
        rng,
        in_flight.release,
        instance=instance,
        deadline=deadline,
        on_settled=on_settled,
        ramp=ramp,
    )
    breaker = Breaker(config.breaker_threshold, instance)
    try:
        with settler, ThreadPoolExecutor(config.concurrency, "relay-publish") as pool:
            yield Pipeline(pool, settler, in_flight, deadline, instance, tally, breaker, ramp)
    finally:
        tally.update(settler.tally)


def deliver_batch(
    store: LeaseStore,
    attempts: Attempts,
    config: RelayConfig,
    pipeline: Pipeline,
    snapshots: Sequence[DueDocument],
) -> None:
    """Lease the events `snapshots` show and hand every lease to `attempts` in the pool: see
    `Relay.deliver()`."""
    if pipeline.breaker.open:
        return  # leasing now would only hand the events back: the channel is broken
    pipeline.tally[Count.BATCHES] += 1
    leases = lease_batch(store, snapshots, pipeline.instance, pipeline.tally, config)
    pipeline.in_flight.acquire(len(leases))
    for lease in leases:
        future = pipeline.pool.submit(attempts.publish, lease, pipeline)
        future.add_done_callback(hand_to(pipeline.settler, lease))
