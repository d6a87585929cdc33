"""Re-drive on the emulator, to a real local downstream: a pause or a cancel reaches a runner
that waits for its pace within a second, at any rate; a job finds every stored event in range
whatever `RELAY_PARTITIONS` is today (events keep the partition they were written with), an
aggregate's events in commit order across two partitions, and the dry run says so."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.partitions import partition_of
from firestore_outbox.redrive.job import JobState
from firestore_outbox.redrive.pacing import WATCH_SECONDS
from firestore_outbox.redrive.selection import Selection
from firestore_outbox.redrive.targets import target_for
from tests.support.helpers import add_own_event
from tests.support.redrive import T0, ids, per_aggregate, redrive, seed


def start(service: Any, rate: float = 1000.0, **filters: Any) -> Any:
    return service.start(Selection(**filters), target=target_for(None), rate=rate, created_by="t")


def wait_for(check: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("rate", "command"),
    [
        (0.1, "pause"),  # the next send is 10 s away: the pacing wait
        (0.1, "cancel"),
        (0.001, "pause"),  # 1,000 s away, past the lease: the wait before renewing it
    ],
)
def test_a_pause_or_cancel_reaches_a_runner_waiting_for_its_pace_within_a_second(
    db: Any, settings: Any, receiver: Receiver, rate: float, command: str
) -> None:
    seed(db, settings, 4)
    service, _ = redrive(db, settings, receiver.url)
    job = start(service, rate=rate)
    result: dict[str, Any] = {}
    runner = threading.Thread(
        target=lambda: result.update(r=service.run(job.job_id, flush_seconds=0)), daemon=True
    )
    runner.start()
    # The first event sent and its progress written: by construction the runner is now in
    # its wait for the second send, which is due 10 s (or 1,000 s) after the first.
    wait_for(lambda: service.jobs.get(job.job_id).counts["sent"] == 1)
    service.jobs.move(job.job_id, command)
    moved = time.monotonic()
    runner.join(WATCH_SECONDS + 2)
    took = time.monotonic() - moved
    assert not runner.is_alive(), "the runner did not notice"
    assert took < WATCH_SECONDS + 0.5, took
    stopped = {"pause": "paused", "cancel": "cancelled"}[command]
    assert (result["r"].stopped, result["r"].sent) == (stopped, 1)
    assert [str(r.event_id) for r in receiver.received] == ["ev-000"]  # nothing more sent
    after = service.jobs.get(job.job_id)
    assert after.state.value == stopped.upper() and after.lease_owner is None
    assert after.counts["sent"] == 1 and after.cursor is not None


def moving(today: int) -> str:
    """An aggregate whose partition under `today` partitions is not its partition under 16."""
    return next(a for a in map(str, range(100)) if partition_of(a, today) != partition_of(a, 16))


@pytest.mark.parametrize("today", [8, 32])
def test_a_job_finds_every_event_written_under_another_partition_count(
    db: Any, settings: Any, receiver: Receiver, today: int
) -> None:
    events = seed(db, settings)  # written under RELAY_PARTITIONS 16, as the 4 below
    aggregate = moving(today)
    for n in range(4):
        when = T0.replace(hour=9, minute=n)
        add_own_event(
            db, settings, f"m-{n}", aggregateId=aggregate, createdAt=when, status="PROCESSED"
        )
    delivered = [e for e in events if e["status"] == "PROCESSED"]
    service, _ = redrive(db, settings, receiver.url, partitions=today)
    found = service.preview(Selection())
    assert found.count == len(delivered) + 4 == 15
    moved = [e for e in delivered if partition_of(e["aggregateId"], today) != e["partition"]]
    assert found.elsewhere == len(moved) + 4
    report = service.run(start(service).job_id)
    assert (report.stopped, report.sent) == ("done", 15)
    assert sorted(report.sent_ids) == sorted([*ids(delivered), "m-0", "m-1", "m-2", "m-3"])
    one = service.run(start(service, aggregate_id=aggregate).job_id)
    assert one.sent_ids == ["m-0", "m-1", "m-2", "m-3"]  # 4 of 4, in commit order
    assert service.jobs.get(one.job_id).state is JobState.DONE


def test_an_aggregate_spread_over_two_partitions_goes_in_commit_order(
    db: Any, settings: Any, receiver: Receiver
) -> None:
    aggregate = moving(8)
    for n in range(6):  # the first three written under 16 partitions, the others under 8
        add_own_event(
            db,
            settings,
            f"x-{n}",
            aggregateId=aggregate,
            status="PROCESSED",
            createdAt=T0.replace(minute=n),
            partition=partition_of(aggregate, 16 if n < 3 else 8),
        )
    service, _ = redrive(db, settings, receiver.url, partitions=8)
    report = service.run(start(service, aggregate_id=aggregate).job_id)
    assert report.sent_ids == [f"x-{n}" for n in range(6)]
    assert per_aggregate(receiver.received) == {aggregate: report.sent_ids}
