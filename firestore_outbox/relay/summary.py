"""What one `Relay.run()` reports (`RunSummary`), why a run stopped (`StopReason`), and how a
run's tally becomes its summary, recorded as metrics (how a run ends: `relay.run.ending`).

The counts are named once, here (`RUN_COUNTS`, their JSON names): follow mode's summary
(`firestore_outbox.relay.follow.progress`) carries the same ones, so a count added here shows
up there too.
"""

from __future__ import annotations

import datetime
import enum
import logging
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from firestore_outbox.observability.metrics import record_run

# The relay's run logger (`firestore_outbox.relay.core`): log queries filter on its name.
logger = logging.getLogger("firestore_outbox.relay.core")


class RunStatus(str, enum.Enum):
    """How a run ended: `ok`; `error` when a Firestore error ended it, or it could publish
    nothing due (see `RunSummary.error`); `refused` when its input (a nudge) was refused whole
    and nothing was run (the summary's `nudgeRefusal` says why)."""

    OK = "ok"
    ERROR = "error"
    REFUSED = "refused"


class StopReason(str, enum.Enum):
    """Why a run stopped draining."""

    DRAINED = "drained"  # nothing due was left
    BUDGET = "budget"  # the time budget ran out (or follow mode is stopping)
    CHANNEL = "channel"  # the circuit breaker opened: the downstream channel is broken
    ERROR = "error"  # Firestore failed
    STOP = "stop"  # follow mode was asked to stop
    # relays of the other lease mode may still hold leases: it drained nothing (see
    # `firestore_outbox.relay.run.mode_records`)
    MODE = "mode"
    # the budget cannot fit one attempt (its HTTP timeouts and the settle): nothing was tried
    BUDGET_TOO_SHORT = "budgetTooShort"
    REFUSED = "refused"  # the nudge was refused whole: nothing was run


class Count(str, enum.Enum):
    """What a run counts: a key of its tally (`Tally`) and, for the first ones (`RUN_COUNTS`),
    of its summary's JSON. A `str` enum: it is its JSON name (`Count.LOST_LEASES ==
    "lostLeases"`), in a `dict` key and in a log line alike."""

    PROCESSED = "processed"
    FAILED = "failed"
    RETRIED = "retried"
    RECLAIMED = "reclaimed"
    RELEASED = "released"
    POISONED = "poisoned"
    CONTENDED = "contended"
    LOST_LEASES = "lostLeases"
    REFUSED = "refused"
    UNSETTLED = "unsettled"
    UNSCHEDULED = "unscheduled"
    LEASED = "leased"
    BATCHES = "batches"
    LAG_MS = "lagMs"
    HEALED = "healed"
    PARTITIONS_CLAIMED = "partitionsClaimed"
    FANNED_OUT = "fannedOut"
    HANDED_OFF = "handedOff"
    READ_RETRIES = "readRetries"  # page reads that failed (a timeout) and were sent again
    PARTITIONS_UNREAD = "partitionsUnread"  # released when their reads kept failing
    MODE_WAITS = "modeWaits"
    # Follow mode's own (`firestore_outbox.relay.follow.progress`).
    ERRORS = "errors"
    LISTENER_DOWN = "listenerDown"
    RESUBSCRIBED = "resubscribed"
    POLLS = "polls"
    REREADS = "rereads"
    RUNS = "runs"
    # The settler's own, in its log lines only.
    SETTLE_RETRIES = "settleRetries"
    SETTLES_READ_BACK = "settlesReadBack"

    def __str__(self) -> str:
        return self.value

    @property
    def attribute(self) -> str:
        """Its `RunSummary` attribute: `lost_leases` for `lostLeases`."""
        return "".join(f"_{c.lower()}" if c.isupper() else c for c in self.value)


# A run's counts as it goes.
Tally = Counter[Count]
# The counts every summary carries, zeros included, in this order.
RUN_COUNTS: tuple[Count, ...] = tuple(Count)[: list(Count).index(Count.MODE_WAITS) + 1]


@dataclass(frozen=True, eq=False)
class RunSummary(Mapping[str, Any]):
    """One run's report. Typed attributes for code; `to_json()` (or reading it as the mapping
    it also is, `summary["processed"]`) for logs and scripts, with the same keys as always."""

    status: RunStatus
    stopped_by: StopReason
    instance_id: str
    duration_ms: int
    error: str | None = None  # what ended the run, when `status` is `error`
    channel: str | None = None  # the broken channel's error class, when stopped by it
    channel_error: str | None = None  # and the error that opened the breaker
    # the lease mode of the relays it waits for, and till when, when stopped by `mode`
    waiting_for: str | None = None
    mode_until: datetime.datetime | None = None
    processed: int = 0
    failed: int = 0
    retried: int = 0
    reclaimed: int = 0
    released: int = 0
    poisoned: int = 0
    contended: int = 0
    lost_leases: int = 0
    refused: int = 0
    unsettled: int = 0
    unscheduled: int = 0
    leased: int = 0
    batches: int = 0
    lag_ms: int = 0
    healed: int = 0
    partitions_claimed: int = 0
    fanned_out: int = 0
    handed_off: int = 0
    read_retries: int = 0
    partitions_unread: int = 0
    mode_waits: int = 0
    _json: dict[str, Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        json: dict[str, Any] = {"status": self.status.value, "stoppedBy": self.stopped_by.value}
        if self.error is not None:
            json["error"] = self.error
        if self.channel is not None:
            json["channel"] = self.channel
        if self.channel_error is not None:
            json["channelError"] = self.channel_error
        if self.waiting_for is not None:
            json["waitingFor"] = self.waiting_for
        if self.mode_until is not None:
            json["modeUntil"] = self.mode_until.isoformat()
        json.update({count.value: getattr(self, count.attribute) for count in RUN_COUNTS})
        json.update(instanceId=self.instance_id, durationMs=self.duration_ms)
        object.__setattr__(self, "_json", json)

    @classmethod
    def from_tally(
        cls,
        tally: Mapping[Count, int],
        *,
        status: RunStatus,
        stopped_by: StopReason,
        instance_id: str,
        duration_ms: int,
        error: str | None = None,
        channel: str | None = None,
        channel_error: str | None = None,
        waiting_for: str | None = None,
        mode_until: datetime.datetime | None = None,
    ) -> RunSummary:
        """The summary of a run whose counts are in `tally`."""
        counts = {count.attribute: int(tally.get(count, 0)) for count in RUN_COUNTS}
        return cls(
            status=status,
            stopped_by=stopped_by,
            instance_id=instance_id,
            duration_ms=duration_ms,
            error=error,
            channel=channel,
            channel_error=channel_error,
            waiting_for=waiting_for,
            mode_until=mode_until,
            **counts,
        )

    def to_json(self) -> dict[str, Any]:
        """The summary as one JSON object (a new dict each call)."""
        return dict(self._json)

    def __getitem__(self, key: str) -> Any:
        return self._json[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._json)

    def __len__(self) -> int:
        return len(self._json)

    @property
    def ok(self) -> bool:
        """True unless a Firestore error ended the run."""
        return self.status is RunStatus.OK


def finish_summary(
    tally: Tally,
    instance: str,
    started: float,
    *,
    stopped_by: StopReason,
    error: str | None = None,
    channel: str | None = None,
    channel_error: str | None = None,
    waiting_for: str | None = None,
    mode_until: datetime.datetime | None = None,
    status: RunStatus | None = None,
) -> RunSummary:
    """The run's summary from `tally`, with its `durationMs` since `started` (monotonic),
    recorded as metrics (`firestore_outbox.observability.metrics`). An `error` makes it
    `status: error`, `stoppedBy: error` (a Firestore error) unless `status` is given: then
    `stopped_by` stands (the run could do nothing, for the reason it names)."""
    summary = RunSummary.from_tally(
        tally,
        status=status or (RunStatus.ERROR if error is not None else RunStatus.OK),
        stopped_by=StopReason.ERROR if error is not None and status is None else stopped_by,
        instance_id=instance,
        duration_ms=round((time.monotonic() - started) * 1000),
        error=error,
        channel=channel,
        channel_error=channel_error,
        waiting_for=waiting_for,
        mode_until=mode_until,
    )
    record_run(summary)
    return summary


def refused_summary(instance: str | None) -> RunSummary:
    """The summary of an invocation whose nudge was refused whole: nothing ran, nothing
    was asked of Firestore (the caller adds what was refused and why)."""
    return finish_summary(
        Counter(),
        instance or "",
        time.monotonic(),
        stopped_by=StopReason.REFUSED,
        status=RunStatus.REFUSED,
    )


def stalled(budget: float, config_attempt: float, source: str) -> str:
    """The `error` of a run whose budget (`source`) cannot fit one attempt."""
    return (
        f"{source} leaves {budget:g} s, less than one attempt needs ({config_attempt:g} s: "
        "RELAY_HTTP_TIMEOUT_SECONDS, its connect timeout and the settle): nothing can be "
        "published; raise the budget or lower RELAY_HTTP_TIMEOUT_SECONDS"
    )
