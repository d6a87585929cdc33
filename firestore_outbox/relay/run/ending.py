"""How a run is accounted for and how it ends: its budget (`Budget`: what it may spend, and
the envelope everything it does past it ends within), and its end (`Ending`: the lease-mode
record taken and left, why it stopped, the summary it reports).

`Relay.run()` (`relay.run.relay`) drives one run with these; the counts themselves and the
summary's shape are `relay.summary`'s.
"""

from __future__ import annotations

import datetime
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from google.api_core import exceptions as google_exceptions

from firestore_outbox.observability.logs import log_event
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.relay.partition_settings import LeaseMode
from firestore_outbox.relay.publish.breaker import Breaker
from firestore_outbox.relay.run.mode_records import ModeRecords, ModeTaken
from firestore_outbox.relay.summary import (
    Count,
    RunStatus,
    RunSummary,
    StopReason,
    Tally,
    finish_summary,
    stalled,
)

# The relay's run logger (`firestore_outbox.relay.core`): log queries filter on its name.
logger = logging.getLogger("firestore_outbox.relay.core")


@dataclass(frozen=True)
class Budget:
    """A run's time: from `started` (monotonic) for `seconds`, to `deadline`; whatever it
    does past its budget (settles, releases, counts) ends by `envelope` (the budget and one
    Firestore timeout, what the function's timeout is sized for). `source`: where the
    budget came from, for the error of a budget too short."""

    started: float
    seconds: float
    source: str

    @property
    def deadline(self) -> float:
        return self.started + self.seconds

    def envelope(self, config: RelayConfig) -> float:
        return self.deadline + config.firestore_timeout_seconds


def budget_of(config: RelayConfig, time_budget: float | None, source: str | None) -> Budget:
    """The configured budget, or `time_budget` (from `source`) when it is shorter."""
    started = time.monotonic()
    if time_budget is not None and time_budget < config.time_budget_seconds:
        return Budget(started, max(0.0, time_budget), source or "time_budget")
    return Budget(started, config.time_budget_seconds, "RELAY_TIME_BUDGET_SECONDS")


def too_short(budget: Budget, config: RelayConfig, instance: str) -> RunSummary | None:
    """The summary of a run whose budget cannot fit one attempt (it tries none), else None."""
    if budget.seconds >= config.attempt_seconds:
        return None
    return finish_summary(
        Counter(),
        instance,
        budget.started,
        stopped_by=StopReason.BUDGET_TOO_SHORT,
        error=stalled(budget.seconds, config.attempt_seconds, budget.source),
        status=RunStatus.ERROR,
    )


@dataclass
class Ending:
    """One run's end as it takes shape: the lease-mode record it took, why it stopped, the
    error that ended it, the broken channel."""

    budget: Budget
    instance: str
    stop: threading.Event | None
    tally: Tally = field(default_factory=Counter)
    stopped_by: StopReason = StopReason.DRAINED
    error: str | None = None
    channel: str | None = None
    channel_error: str | None = None
    taken: list[ModeTaken] = field(default_factory=list)

    def take_mode(self, modes: ModeRecords, mode: LeaseMode, lease_seconds: float) -> bool:
        """Take the lease-mode record for the budget and a lease; False: a relay of the
        other lease mode may be draining (logged and counted)."""
        self.taken.append(modes.take(mode, self.budget.seconds + lease_seconds))
        waiting, until = self.taken[-1].waiting_for, self.taken[-1].until
        if waiting is not None and until is not None:
            waiting_for_mode(self.tally, self.instance, waiting, until)
        return waiting is None

    def broken(self, breaker: Breaker) -> None:
        """The channel broke (also when the breaker opened after the last lease)."""
        if breaker.error_class:
            self.stopped_by, self.channel = StopReason.CHANNEL, breaker.error_class
            self.channel_error = breaker.error

    def failed(self, exc: google_exceptions.GoogleAPIError) -> None:
        self.error = firestore_error(exc, self.instance)

    def leave(self, modes: ModeRecords, *, nudged: bool) -> None:
        """Leave the lease-mode record this run took, if it took one."""
        if self.taken and self.taken[-1].waiting_for is None:
            # A clean run released its partitions and settled what it leased: it holds nothing.
            modes.leave(
                clean=self.error is None and not self.tally[Count.UNSETTLED],
                shorten=nudged,  # a nudged run: maybe a cold instance's last
            )

    def summary(self) -> RunSummary:
        taken = self.taken[-1] if self.taken else None
        waited = taken if taken is not None and taken.waiting_for is not None else None
        if starved(self.tally, self.stopped_by, self.error, self.stop):
            return finish_summary(
                self.tally,
                self.instance,
                self.budget.started,
                stopped_by=self.stopped_by,
                error="the time budget ran out before anything was published",
                status=RunStatus.ERROR,
            )
        return finish_summary(
            self.tally,
            self.instance,
            self.budget.started,
            stopped_by=StopReason.MODE if waited else self.stopped_by,
            error=self.error,
            channel=self.channel,
            channel_error=self.channel_error,
            waiting_for=waited.waiting_for if waited else None,
            mode_until=waited.until if waited else None,
        )


def firestore_error(exc: google_exceptions.GoogleAPIError, instance: str) -> str:
    """Log the Firestore error that ended run `instance`; the summary's `error` for it."""
    log_event(
        logger,
        logging.ERROR,
        "relay.firestore_error",
        f"relay {instance} stopped: Firestore error: {exc}",
        instanceId=instance,
        errorClass=type(exc).__name__,
    )
    return f"Firestore: {exc}"


def waiting_for_mode(tally: Tally, instance: str, mode: str, until: datetime.datetime) -> None:
    """Log that run `instance` drains nothing because relays of lease mode `mode` may still
    hold leases until `until` (`firestore_outbox.relay.run.mode_records`), and count it."""
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
    tally[Count.MODE_WAITS] += 1


def starved(
    tally: Tally, stopped_by: StopReason, error: str | None, stop: threading.Event | None
) -> bool:
    """Whether a run's budget ran out before it published anything: a run with nothing due
    stops `drained`, so its summary must not say `ok`. Not a follow-mode run (`stop` given):
    its follower runs again at once, and takes a summary that is not ok for Firestore's."""
    return (
        error is None
        and stopped_by is StopReason.BUDGET
        and stop is None
        and not tally[Count.LEASED]
    )
