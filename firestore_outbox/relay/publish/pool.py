"""The publishing pool of one drain: how it is opened with its settler (`open_pipeline`),
how each publish's result is handed to the settler (`hand_to`), and the ramp governor that
paces it (`ramp_governor`). `Relay.pipeline()` is `open_pipeline` bound to a relay's store
and configuration."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

from firestore_outbox.publishers.base import PublishResult
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.relay.lease import Lease, OnSettled
from firestore_outbox.relay.pipeline import InFlight, Pipeline
from firestore_outbox.relay.publish.attempts import retry_for_bug
from firestore_outbox.relay.publish.breaker import Breaker
from firestore_outbox.relay.ramp import RampGovernor, RampSchedule
from firestore_outbox.relay.settle.settler import Settler
from firestore_outbox.relay.store import LeaseStore
from firestore_outbox.relay.summary import Tally


def hand_to(settler: Settler, lease: Lease) -> Callable[[Future[PublishResult | None]], None]:
    """A done-callback that passes a publish's result to the settler."""

    def settle(published: Future[PublishResult | None]) -> None:
        settler.put(lease, outcome_of(published, lease))

    return settle


def outcome_of(published: Future[PublishResult | None], lease: Lease) -> PublishResult | None:
    """A publish's result; a retry if the attempt raised after all (a bug in its own code:
    tracing, metrics). A done-callback that raises is only logged by the pool, and its lease
    was then neither settled nor counted done: the run waited for it for ever."""
    try:
        return published.result()
    except Exception as exc:
        event_id = lease.event.event_id
        return retry_for_bug(
            "relay.attempt_raised",
            f"the attempt on event {event_id} raised",
            exc,
            event_id=event_id,
            attempt=lease.attempt,
            # The class only: its message may hold what the publisher's errors are masked for.
            error=f"the attempt raised {type(exc).__name__}",
        )


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
