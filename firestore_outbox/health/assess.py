"""`assess`: the one judgement of the relay's health, from a `HealthReading` and the
thresholds. The watchdog alerts on what it finds and the console shows the same `Health`,
so an alert and the overview always say the same thing, in the same words."""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from firestore_outbox.health.reading import HealthReading, Watched, read_health
from firestore_outbox.health.settings import Thresholds
from firestore_outbox.numbers import human
from firestore_outbox.relay.heartbeat import Beat

if TYPE_CHECKING:
    from google.cloud.firestore import Client

__all__ = ["Health", "Problem", "ProblemCode", "assess", "judge", "unreachable"]


class ProblemCode(str, enum.Enum):
    """What can be wrong; each is one incident of the watchdog's."""

    RELAY_STOPPED = "relay_stopped"
    RELAY_ERROR = "relay_error"
    CHANNEL_BROKEN = "channel_broken"
    BACKLOG_OLD = "backlog_old"
    FAILED_GROWING = "failed_growing"
    STUCK_LEASE = "stuck_lease"
    NUDGES_FAILING = "nudges_failing"
    FIRESTORE_UNREACHABLE = "firestore_unreachable"


@dataclass(frozen=True)
class Problem:
    code: ProblemCode
    message: str


@dataclass(frozen=True)
class Health:
    """The problems found (none: healthy) and the newest heartbeat (None: no relay has run
    since the heartbeat existed), with its age in seconds."""

    problems: tuple[Problem, ...]
    last_beat: Beat | None = None
    last_beat_age: float | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def codes(self) -> set[str]:
        return {p.code.value for p in self.problems}


def assess(reading: HealthReading, thresholds: Thresholds) -> Health:
    """Every threshold crossed in `reading`, as problems, in a fixed order."""
    found: list[Problem] = []
    beats = [b for b in reading.beats if b.at is not None]
    last = max(beats, key=_at, default=None)
    age = None if last is None else (reading.now - _at(last)).total_seconds()
    if last is None or age is None:
        found.append(Problem(ProblemCode.RELAY_STOPPED, "no relay run has been recorded"))
    elif age > thresholds.stale_seconds:
        found.append(Problem(ProblemCode.RELAY_STOPPED, f"the relay last ran {human(age)} ago"))
    if last is not None and last.status == "error":
        found.append(Problem(ProblemCode.RELAY_ERROR, f"the last run failed: {last.error}"))
    if last is not None and last.channel is not None:
        since = "" if last.channel_since is None else f" since {_clock(last.channel_since)}"
        found.append(
            Problem(
                ProblemCode.CHANNEL_BROKEN,
                f"the channel is broken ({last.channel}){since}: {last.channel_error or ''}".rstrip(
                    ": "
                ),
            )
        )
    if (
        reading.oldest_due_seconds is not None
        and reading.oldest_due_seconds > thresholds.pending_age_seconds
    ):
        found.append(
            Problem(
                ProblemCode.BACKLOG_OLD,
                f"the oldest due event ({reading.oldest_due_event}) has waited "
                f"{human(reading.oldest_due_seconds)}",
            )
        )
    if reading.failed_lately >= thresholds.failed_growth:
        found.append(
            Problem(
                ProblemCode.FAILED_GROWING,
                f"{reading.failed_lately} events became FAILED in the last "
                f"{human(reading.window_seconds)} ({reading.failed} FAILED in all)",
            )
        )
    stuck = [s for s in reading.stuck if s.overdue_seconds > thresholds.stuck_seconds]
    if stuck:
        worst = max(stuck, key=lambda s: s.overdue_seconds)
        held = f" by {worst.holder}" if worst.holder else ""
        found.append(
            Problem(
                ProblemCode.STUCK_LEASE,
                f"{len(stuck)} leases held past their time; {worst.what}{held} "
                f"{human(worst.overdue_seconds)} over",
            )
        )
    window = datetime.timedelta(seconds=thresholds.stale_seconds)
    recent = [b for b in beats if reading.now - _at(b) <= window]
    nudges_failed = sum(b.nudges_failed for b in recent)
    if nudges_failed:
        sent = sum(b.nudges_sent for b in recent)
        found.append(
            Problem(
                ProblemCode.NUDGES_FAILING,
                f"{nudges_failed} hand-off nudges failed ({sent} sent) in the recent runs",
            )
        )
    return Health(tuple(found), last, age)


def judge(
    db: Client, watched: Watched, thresholds: Thresholds, *, timeout: float
) -> tuple[HealthReading, Health]:
    """Read (`read_health`, within the thresholds' window) and judge: what the watchdog alerts
    on and the console shows."""
    reading = read_health(db, watched, window_seconds=thresholds.window_seconds, timeout=timeout)
    return reading, assess(reading, thresholds)


def unreachable(host: str, error: str) -> Health:
    """The health a check that could not read Firestore reports."""
    message = f"Firestore at {host} did not answer: {error}"
    return Health((Problem(ProblemCode.FIRESTORE_UNREACHABLE, message),))


def _at(beat: Beat) -> datetime.datetime:
    assert beat.at is not None
    return beat.at


def _clock(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
