"""Re-drive jobs on the emulator, to a real local HTTP downstream: what is sent and how, the
rate, the lease between two runners, pause, resume, cancel and a retry."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from firestore_outbox.consumer import InvalidSignature, verify_request
from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.redrive.job import JobState
from firestore_outbox.redrive.selection import Selection
from firestore_outbox.redrive.targets import target_for
from tests.support.redrive import ids, per_aggregate, redrive, seed, update_times

SECRET = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQ="


def delivered(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["status"] == "PROCESSED"]


def start(service: Any, url: str | None = None, rate: float = 1000.0, **filters: Any) -> Any:
    return service.jobs.get(
        service.start(
            Selection(**filters), target=target_for(url), rate=rate, created_by="test"
        ).job_id
    )


def operator_at(n: int, command: str, service: Any, job_id: str, receiver: Receiver) -> Any:
    """A downstream whose n-th request finds the job moved by an operator (`command`) while
    it is being sent: the runner must see it at its next progress write."""

    def respond(_: Received) -> ReceiverAnswer:
        if len(receiver.received) == n:
            service.jobs.move(job_id, command)
        return ReceiverAnswer(200)

    return respond


def test_a_job_sends_each_event_once_in_order_with_its_id_signed_and_marked(
    db: Any, settings: Any, receiver: Receiver
) -> None:
    events = seed(db, settings)
    before = update_times(db, settings)
    service, _ = redrive(db, settings, receiver.url, signing_secrets=(SECRET,))
    job = start(service)
    report = service.run(job.job_id)
    assert (report.started, report.stopped, report.sent) == (True, "done", 11)
    got = receiver.received
    assert sorted(str(r.event_id) for r in got) == sorted(ids(delivered(events)))
    for aggregate, order in per_aggregate(got).items():
        commit_order = [e["eventId"] for e in delivered(events) if e["aggregateId"] == aggregate]
        assert order == commit_order
    for request in got:
        assert request.headers["ce-outboxreplay"] == job.job_id
        assert request.headers["idempotency-key"] == request.event_id
        verified = verify_request(request.headers, request.body, [SECRET])
        assert verified.attributes["outboxreplay"] == job.job_id
    finished = service.jobs.get(job.job_id)
    assert finished.state is JobState.DONE
    assert finished.counts == {"selected": 11, "sent": 11, "rejected": 0, "skipped": 0}
    assert finished.lease_owner is None
    assert update_times(db, settings) == before  # the job wrote no outbox document


def test_an_edited_marker_fails_the_signature(db: Any, settings: Any, receiver: Receiver) -> None:
    seed(db, settings, 3)
    service, _ = redrive(db, settings, receiver.url, signing_secrets=(SECRET,))
    service.run(start(service).job_id)
    request = receiver.received[0]
    stripped = {k: v for k, v in request.headers.items() if k != "ce-outboxreplay"}
    with pytest.raises(InvalidSignature, match="do not match"):
        verify_request(stripped, request.body, [SECRET])


def test_the_rate_is_respected_over_the_run(db: Any, settings: Any, receiver: Receiver) -> None:
    seed(db, settings)
    arrivals: list[float] = []

    def timed(_: Received) -> ReceiverAnswer:
        arrivals.append(time.monotonic())
        return ReceiverAnswer(200)

    receiver.respond = timed
    service, _ = redrive(db, settings, receiver.url)
    rate = 20.0
    job = start(service, rate=rate)
    before = time.monotonic()
    report = service.run(job.job_id)
    assert report.sent == len(arrivals) == 11
    # Send n goes n / rate after send 0, which is after `before`; the last arrives after it
    # is sent. A loaded machine only makes the run slower: the bound holds however busy.
    assert arrivals[-1] - before >= (len(arrivals) - 1) / rate
    # and the pace is the job's, not the downstream's: far slower than it answers unpaced
    unpaced = service.run(start(service).job_id)
    assert unpaced.sent == 11


def test_a_pace_slower_than_the_lease_renews_it_between_sends(
    db: Any, settings: Any, receiver: Receiver
) -> None:
    seed(db, settings, 3)
    # a 3 s lease, an attempt of 1.5 s: a send 2 s after the last outlives an unrenewed lease
    service, config = redrive(db, settings, receiver.url)
    assert (config.lock_timeout_seconds, config.attempt_seconds) == (3.0, 1.5)
    report = service.run(start(service, rate=0.5).job_id)
    assert (report.stopped, report.sent) == ("done", 3)


def test_a_second_runner_cannot_take_a_job_held_by_the_first(
    db: Any, settings: Any, receiver: Receiver
) -> None:
    seed(db, settings, 6)
    arrived, release = threading.Event(), threading.Event()

    def hold_first(request: Received) -> ReceiverAnswer:
        if request.event_id == "ev-000":
            arrived.set()
            release.wait(30)
        return ReceiverAnswer(200)

    receiver.respond = hold_first
    # the held request must outlast neither its read timeout nor the lease
    service, _ = redrive(
        db, settings, receiver.url, http_timeout_seconds=20.0, lock_timeout_seconds=60.0
    )
    job = start(service)
    first: dict[str, Any] = {}
    runner = threading.Thread(target=lambda: first.update(r=service.run(job.job_id, owner="a")))
    runner.start()
    assert arrived.wait(30)  # runner a holds the lease and is sending ev-000
    second = service.run(job.job_id, owner="b")
    release.set()
    runner.join(30)
    assert not second.started and second.stopped.startswith("held by a")
    sent = ["ev-000", "ev-001", "ev-002", "ev-003", "ev-005"]  # ev-004 FAILED
    assert sorted(first["r"].sent_ids) == sent
    assert sorted(str(r.event_id) for r in receiver.received) == sent


def test_a_cancelled_job_stops_and_is_not_run_again(
    db: Any, settings: Any, receiver: Receiver
) -> None:
    seed(db, settings)
    service, _ = redrive(db, settings, receiver.url)
    job = start(service)

    receiver.respond = operator_at(3, "cancel", service, job.job_id, receiver)
    report = service.run(job.job_id, flush_seconds=0)
    assert (report.stopped, report.sent) == ("cancelled", 3)
    cancelled = service.jobs.get(job.job_id)
    assert cancelled.state is JobState.CANCELLED and cancelled.counts["sent"] == 3
    again = service.run(job.job_id)
    assert (again.started, again.stopped) == (False, "the job is CANCELLED")
    assert len(receiver.received) == 3


def test_a_paused_job_resumes_where_it_stopped(db: Any, settings: Any, receiver: Receiver) -> None:
    events = seed(db, settings)
    service, _ = redrive(db, settings, receiver.url)
    job = start(service)

    receiver.respond = operator_at(4, "pause", service, job.job_id, receiver)
    assert service.run(job.job_id, flush_seconds=0).stopped == "paused"
    assert not service.run(job.job_id).started
    receiver.respond = lambda _: ReceiverAnswer(200)
    service.jobs.move(job.job_id, "resume")
    assert service.run(job.job_id, flush_seconds=0).stopped == "done"
    assert sorted(str(r.event_id) for r in receiver.received) == sorted(ids(delivered(events)))


def test_an_answer_to_retry_ends_the_run_and_the_next_run_sends_that_event_first(
    db: Any, settings: Any, receiver: Receiver
) -> None:
    seed(db, settings, 6)
    refused: list[str] = []

    def unavailable_once(request: Received) -> ReceiverAnswer:
        if request.event_id == "ev-003" and not refused:
            refused.append("ev-003")
            return ReceiverAnswer(503)
        return ReceiverAnswer(200)

    receiver.respond = unavailable_once
    service, _ = redrive(db, settings, receiver.url)
    job = start(service)
    first = service.run(job.job_id, flush_seconds=0)
    assert first.stopped == "retry" and "ev-003" not in first.sent_ids
    second = service.run(job.job_id, flush_seconds=0)
    assert second.sent_ids[0] == "ev-003" and second.stopped == "done"
    both = first.sent_ids + second.sent_ids
    assert sorted(both) == ["ev-000", "ev-001", "ev-002", "ev-003", "ev-005"]  # none twice
