"""A re-drive job beside the live relay: the relay's deliveries keep their per-aggregate
order and leases, and the job writes no outbox document."""

from __future__ import annotations

import threading
from typing import Any

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.redrive.selection import Selection
from firestore_outbox.redrive.targets import target_for
from tests.support.helpers import add_own_event, make_relay, outbox, run_until
from tests.support.redrive import per_aggregate, redrive, seed, update_times

SLOW = {"http_timeout_seconds": 20.0, "lock_timeout_seconds": 60.0}  # outlast the meeting


def test_live_delivery_keeps_its_order_beside_a_job(
    db: Any, settings: Any, receiver: Receiver
) -> None:
    seed(db, settings)
    replayed_before = update_times(db, settings)
    service, _ = redrive(db, settings, receiver.url, **SLOW)
    job = service.start(Selection(), target=target_for(None), rate=200.0, created_by="test")
    # New events on the same aggregates, committed after the job began: live, not the job's.
    live = [
        add_own_event(db, settings, f"live-{n:03d}", aggregateId="ab"[n % 2])["eventId"]
        for n in range(12)
    ]
    # The first live and the first replayed request wait for each other: the two run at once.
    both = threading.Barrier(2, timeout=30)
    overlapped: list[str] = []

    def meet_once(request: Received) -> ReceiverAnswer:
        kind = "replay" if "ce-outboxreplay" in request.headers else "live"
        if kind not in overlapped:
            overlapped.append(kind)
            both.wait()
        return ReceiverAnswer(200)

    receiver.respond = meet_once
    reports: list[Any] = []
    runner = threading.Thread(target=lambda: reports.append(service.run(job.job_id)))
    runner.start()
    relay = make_relay(db, settings, receiver.url, **SLOW)
    run_until(
        relay,
        lambda: all(outbox(db, settings)[e]["status"] == "PROCESSED" for e in live),
        timeout=60,
    )
    runner.join(60)
    assert sorted(overlapped) == ["live", "replay"] and not both.broken
    assert (reports[0].stopped, reports[0].sent) == ("done", 11)
    live_requests = [r for r in receiver.received if "ce-outboxreplay" not in r.headers]
    assert sorted(str(r.event_id) for r in live_requests) == sorted(live)  # each once
    for aggregate, order in per_aggregate(live_requests).items():
        assert order == [e for i, e in enumerate(live) if "ab"[i % 2] == aggregate]
    after = update_times(db, settings)
    assert {k: after[k] for k in replayed_before} == replayed_before  # the job wrote none
