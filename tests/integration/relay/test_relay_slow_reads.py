"""A page read that times out, on the real emulator: retried within the budget, and a
partition whose reads keep failing released unread while the rest of the run goes on.

The slow read is forced, not hoped for: a `FaultInjector` on the relay's own channel holds
every page query of one chosen partition until the call's own deadline
(`RELAY_FIRESTORE_TIMEOUT_SECONDS`) passes, then fails it `DEADLINE_EXCEEDED`, as a query
Firestore never answers does. Every other call goes to the emulator untouched."""

from __future__ import annotations

import grpc
import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.reads import READ_TRIES
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay import Relay
from tests.support.faults import FaultInjector, faulty_client, page_of
from tests.support.helpers import add_orders, make_relay, outbox

TIMEOUT = 1.0  # RELAY_FIRESTORE_TIMEOUT_SECONDS: each stalled read takes this long


def slow_partition(db: firestore.Client, settings: Settings) -> tuple[int, set[str], set[str]]:
    """The partition of the first event, its events, and every other event."""
    events = outbox(db, settings)
    chosen = min(e["partition"] for e in events.values())
    inside = {k for k, e in events.items() if e["partition"] == chosen}
    return chosen, inside, set(events) - inside


def stalled_relay(
    settings: Settings, url: str, partition: int, times: int
) -> tuple[Relay, FaultInjector]:
    """A relay on a client of its own whose next `times` page queries of `partition` stall
    until their deadline, then fail DEADLINE_EXCEEDED."""
    client, faults = faulty_client(settings)
    stalled = page_of(partition)
    faults.fail(
        "RunQuery", grpc.StatusCode.DEADLINE_EXCEEDED, times=times, when=stalled, stall=True
    )
    return make_relay(client, settings, url, firestore_timeout_seconds=TIMEOUT), faults


def test_a_partition_whose_reads_keep_timing_out_is_released_and_the_others_are_delivered(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 24)
    partition, stalled, others = slow_partition(db, settings)
    assert stalled and others
    relay, faults = stalled_relay(settings, receiver.url, partition, times=100)
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


@pytest.mark.parametrize("nudged", [False, True])
def test_a_read_that_times_out_once_is_sent_again_and_the_run_delivers_everything(
    nudged: bool, db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    # A timer's run (the stalled query: a page after the claim), or a nudge's (its first
    # page, read beside the claim).
    add_orders(db, settings, 12)
    partition, inside, _ = slow_partition(db, settings)
    relay, faults = stalled_relay(settings, receiver.url, partition, times=1)
    summary = relay.run(partitions=[partition] if nudged else None).to_json()

    assert faults.injected == 1
    assert summary["status"] == "ok", summary
    assert (summary["readRetries"], summary["partitionsUnread"]) == (1, 0), summary
    assert summary["processed"] == (len(inside) if nudged else 12), summary
    assert {outbox(db, settings)[e]["status"] for e in inside} == {"PROCESSED"}
