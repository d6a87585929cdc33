"""`assess`, the one judgement the watchdog alerts on and the console shows: each threshold,
crossed and not, on hand-made readings."""

from __future__ import annotations

import dataclasses
import datetime as dt

from firestore_outbox.health.assess import assess
from firestore_outbox.health.reading import HealthReading, Stuck
from firestore_outbox.health.settings import Thresholds
from firestore_outbox.relay.heartbeat import Beat

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.timezone.utc)
LIMITS = Thresholds(stale_seconds=300, pending_age_seconds=600, stuck_seconds=60)


def beat(seconds_ago: float, **changes: object) -> Beat:
    fresh = Beat(
        "relay-0",
        NOW - dt.timedelta(seconds=seconds_ago),
        "ok",
        "drained",
        None,
        {"processed": 3},
        None,
        None,
        None,
        0,
        0,
    )
    return dataclasses.replace(fresh, **changes)  # type: ignore[arg-type]


def reading(*beats: Beat, **changes: object) -> HealthReading:
    healthy = HealthReading(NOW, list(beats), None, None, 0, 0, 900.0)
    return dataclasses.replace(healthy, **changes)  # type: ignore[arg-type]


def codes(r: HealthReading) -> set[str]:
    return assess(r, LIMITS).codes


def test_a_fresh_heartbeat_and_an_empty_backlog_are_healthy() -> None:
    health = assess(reading(beat(10)), LIMITS)
    assert health.ok and health.last_beat_age == 10


def test_no_heartbeat_or_an_old_one_is_a_stopped_relay() -> None:
    assert codes(reading()) == {"relay_stopped"}
    assert codes(reading(beat(301))) == {"relay_stopped"}
    assert codes(reading(beat(301), beat(299, shard="relay-5"))) == set()  # the newest counts


def test_the_newest_beat_tells_the_channel_with_its_reason_and_since_when() -> None:
    since = NOW - dt.timedelta(minutes=7)
    broken = beat(5, channel="HTTP 404", channel_error="HTTP 404: no route", channel_since=since)
    [problem] = assess(reading(broken), LIMITS).problems
    assert problem.code.value == "channel_broken"
    assert "HTTP 404" in problem.message and "11:53:00" in problem.message
    assert codes(reading(broken, beat(1, shard="relay-2"))) == set()  # a later run delivered


def test_each_backlog_threshold_is_crossed_only_past_it() -> None:
    fresh = beat(1)
    assert codes(reading(fresh, oldest_due_seconds=600)) == set()
    assert codes(reading(fresh, oldest_due_seconds=601, oldest_due_event="e")) == {"backlog_old"}
    assert codes(reading(fresh, failed_lately=1)) == {"failed_growing"}
    assert codes(reading(fresh, stuck=[Stuck("partition 3", "r", 60)])) == set()
    assert codes(reading(fresh, stuck=[Stuck("partition 3", "r", 61)])) == {"stuck_lease"}
    assert codes(reading(beat(1, nudges_failed=2))) == {"nudges_failing"}
    assert codes(reading(beat(1, status="error", error="Firestore: 503"))) == {"relay_error"}
