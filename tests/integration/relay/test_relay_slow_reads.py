"""A page read that times out, on the real emulator: retried within the budget, and a
partition whose reads keep failing released unread while the rest of the run goes on.

The slow read is forced, not hoped for: a `FaultInjector` on the relay's own channel holds
every page query of one chosen partition until the call's own deadline
(`RELAY_FIRESTORE_TIMEOUT_SECONDS`) passes, then fails it `DEADLINE_EXCEEDED`, as a query
Firestore never answers does. Every other call goes to the emulator untouched."""

from __future__ import annotations

import grpc
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay.partitioned.page_reads import READ_TRIES
from tests.support.faults import faulty_client, page_of
from tests.support.helpers import add_orders, make_relay, outbox

TIMEOUT = 1.0  # RELAY_FIRESTORE_TIMEOUT_SECONDS: each stalled read takes this long


def slow_partition(db: firestore.Client, settings: Settings) -> tuple[int, set[str], set[str]]:
    """The partition of the first event, its events, and every other event."""
    events = outbox(db, settings)
    chosen = min(e["partition"] for e in events.values())
    inside = {k for k, e in events.items() if e["partition"] == chosen}
    return chosen, inside, set(events) - inside


def test_a_partition_whose_reads_keep_timing_out_is_released_and_the_others_are_delivered(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 24)
    partition, stalled, others = slow_partition(db, settings)
    assert stalled and others
    client, faults = faulty_client(settings)
    faults.fail(
        "RunQuery",
        grpc.StatusCode.DEADLINE_EXCEEDED,
        times=100,
        when=page_of(partition),
        stall=True,
    )
    relay = make_relay(client, settings, receiver.url, firestore_timeout_seconds=TIMEOUT)
    summary = relay.run().to_json()

    assert faults.injected == READ_TRIES  # read, then tried again twice, then given up
    assert summary["status"] == "ok", summary
    assert summary["readRetries"] == READ_TRIES - 1, summary
    assert summary["partitionsUnread"] == 1, summary
    assert summary["processed"] == len(others), summary
    events = outbox(db, settings)
    assert {events[e]["status"] for e in others} == {"PROCESSED"}
    assert {events[e]["status"] for e in stalled} == {"PENDING"}
    assert {events[e].get("attempts", 0) for e in stalled} == {0}  # nothing was spent
    assert {r.event_id for r in receiver.received} == others

    # Released, not left held until its lease expires: the next run (reads answered) takes it.
    again = make_relay(db, settings, receiver.url).run().to_json()
    assert again["processed"] == len(stalled), again
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}


def test_a_read_that_times_out_once_is_sent_again_and_the_run_delivers_everything(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 12)
    partition, _, _ = slow_partition(db, settings)
    client, faults = faulty_client(settings)
    faults.fail(
        "RunQuery", grpc.StatusCode.DEADLINE_EXCEEDED, times=1, when=page_of(partition), stall=True
    )
    relay = make_relay(client, settings, receiver.url, firestore_timeout_seconds=TIMEOUT)
    summary = relay.run().to_json()

    assert faults.injected == 1
    assert summary["status"] == "ok", summary
    assert (summary["readRetries"], summary["partitionsUnread"]) == (1, 0), summary
    assert summary["processed"] == 12, summary
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}


def test_a_nudged_partition_whose_first_page_times_out_is_read_again(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 12)
    partition, inside, _ = slow_partition(db, settings)
    client, faults = faulty_client(settings)
    faults.fail(
        "RunQuery", grpc.StatusCode.DEADLINE_EXCEEDED, times=1, when=page_of(partition), stall=True
    )
    relay = make_relay(client, settings, receiver.url, firestore_timeout_seconds=TIMEOUT)
    summary = relay.run(partitions=[partition]).to_json()

    assert faults.injected == 1
    assert summary["status"] == "ok" and summary["readRetries"] == 1, summary
    assert summary["processed"] == len(inside), summary
