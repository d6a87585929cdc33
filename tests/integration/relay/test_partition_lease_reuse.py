"""A relay keeps what it knows of the partition leases from one run to the next: its next run
claims by the update times its own writes returned, reading no lease document (and makes no
call for its lease-mode record: the first run's covers it), and a lease
changed meanwhile by another invocation is refused by the claim's precondition, not
overwritten."""

from __future__ import annotations

import random
from collections import Counter

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import partition_of
from firestore_outbox.testing.metering import meter
from tests.support.helpers import add_orders, make_relay, outbox

SURVEY = 2 * 16  # events a run's survey reads, with a backlog
FIRST_CLAIM = 4  # partitions the first claim names (RELAY_PARTITIONS_PER_CLAIM's default)
MODE_READS = 1  # the first run's lease-mode record read back (written once, kept)
HEARTBEAT_READS = 1  # a relay's first heartbeat reads its shard (then carries its update time)


def test_a_relays_next_run_reads_no_lease_document(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    relay_db = get_db_client(settings)
    counts = meter(relay_db)
    relay = make_relay(relay_db, settings, receiver.url, batch_size=50)  # 16 partitions
    add_orders(db, settings, 120)
    assert relay.run()["processed"] == 120
    first = counts.snapshot()
    # The first claim reads the leases of the partitions it names (missing: all 16 are
    # created, and known from then on); the survey reads 2 x 16 events' partition fields (no
    # count of the backlog before the first page). The first claim's pages, read while it
    # claimed, count once: nobody held a lease just created.
    assert first["reads"] == 120 + FIRST_CLAIM + SURVEY + MODE_READS + HEARTBEAT_READS
    # Named by the call that received them: the events' pages, the lease documents' get (and
    # the heartbeat's shard).
    assert counts.reads_by_method() == {
        "RunQuery": 120 + SURVEY + MODE_READS,
        "BatchGetDocuments": FIRST_CLAIM + HEARTBEAT_READS,
    }

    add_orders(db, settings, 120)
    counts.reset()
    summary = relay.run()
    assert summary["processed"] == 120
    # One read per event: the claims went by what the first run's releases returned; the
    # lease-mode record the first run wrote covers this one (no read, no write for it); the
    # heartbeat, written moments ago with the same report, is not written again.
    assert counts.snapshot()["reads"] == 120 + SURVEY
    assert "rpc:BatchGetDocuments" not in counts.snapshot()
    assert counts.writes == 120 + 2 * 16  # each partition claimed and released
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}


def test_a_lease_taken_between_runs_is_not_drained_by_the_stale_knower(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    relay = make_relay(db, settings, receiver.url, batch_size=50, partitions=4)
    add_orders(db, settings, 8)
    assert relay.run()["processed"] == 8  # it now knows all four leases as free

    # Another invocation claims two partitions; the first relay has not read them since.
    # A lease that outlasts the test however slow the machine (the relay's own is 3 s).
    other = make_relay(db, settings, receiver.url, partitions=4, lock_timeout_seconds=120)
    other.store.count_at(other.store.collection, None)  # its clock's first reading
    taken = other.partition_leases().claim("other", 2, rng=random.Random(5))
    assert len(taken) == 2
    held = {h.partition for h in taken}

    before = set(outbox(db, settings))
    ids = sorted(set(add_orders(db, settings, 40)) - before)
    summary = relay.run()
    events = outbox(db, settings)
    # The orders were written for 16 partitions: with 4, an event belongs in the partition
    # of its aggregate among 4, written by its settle (healed in the same write).
    in_held = [e for e in ids if partition_of(events[e]["aggregateId"], 4) in held]
    assert in_held and summary["processed"] == 40 - len(in_held)
    assert {events[e]["status"] for e in in_held} == {"PENDING"}  # left to their holder
    others = [e for e in ids if e not in in_held]
    assert {(events[e]["status"], events[e]["partition"] in held) for e in others} == {
        ("PROCESSED", False)
    }

    other.partition_leases().release(taken)
    assert relay.run()["processed"] == len(in_held)
    delivered = Counter(r.event_id for r in receiver.received)
    assert all(delivered[e] == 1 for e in ids)  # none delivered twice


def test_a_warm_relay_whose_every_lease_changed_since_still_claims_them(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    # Two warm Function Compute instances taking turns: each run by one finds every lease
    # changed by the other's run since it last looked (claimed and released again).
    first = make_relay(db, settings, receiver.url, batch_size=50)  # 16 partitions
    second = make_relay(db, settings, receiver.url, batch_size=50)
    for relay in (first, second, first):
        add_orders(db, settings, 48)  # more than two a partition: every partition is claimed
        summary = relay.run()
        assert (summary["processed"], summary["partitionsClaimed"]) == (48, 16), summary
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
