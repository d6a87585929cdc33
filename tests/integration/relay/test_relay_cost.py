"""What the relay costs in Firestore operations, counted on the wire
(`firestore_outbox.testing.metering`)."""

from __future__ import annotations

from collections import Counter

from google.cloud import firestore

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import DEFAULT_PARTITIONS, partition_of
from firestore_outbox.relay import Relay
from firestore_outbox.testing.metering import meter
from tests.support.helpers import add_orders, make_relay, outbox

# A lease far longer than any run here. The tests' usual 3 s lease is renewed once 40% of it
# is gone (one write per partition held) and an event lease expires after it: a run slowed
# past the renewal point (1.5 s when it was half) by a loaded machine wrote 9 to 13 more
# documents (renewals, each one a write the relay owes to keep its partitions), so the
# counts below were those of a fast machine.
# What a run costs per event and per partition is pinned with no renewal due.
LEASE_SECONDS = 120.0

# A relay's first run with work writes its lease-mode record (one write; the relay keeps it for
# its next runs) and reads the live records (its own: one read);
# `firestore_outbox.relay.run.mode_records`.
MODE_READS, MODE_WRITES = 1, 1
# A relay that wrote a new record looks for lapsed ones to delete when its run ends (none
# here: one empty query, billed one read).
MODE_SWEEP = 1
# Every run ends with its heartbeat (`firestore_outbox.relay.heartbeat`): one write; a relay's
# first reads its shard first (one read: its update time, the write's precondition).
HEARTBEAT_READS, HEARTBEAT_WRITES = 1, 1


def orders_in_every_partition(
    db: firestore.Client, settings: Settings, count: int, tag: str
) -> None:
    """`count` orders whose ids come from idempotency keys (`tag`-n), so the partitions
    their events fall in are the same on every run, and every partition has some. With
    Firestore's random ids one of the 16 partitions got none of 120 events in about 1 run
    of 150: its page came back empty, one more empty query than the count below says."""
    for n in range(count):
        with FirestoreUnitOfWork(db, settings) as uow:
            create_new_order(
                f"customer-{n}",
                [{"productId": "sku-1", "quantity": 1}],
                uow,
                idempotency_key=f"{tag}-{n}",
            )
    per_partition = Counter(
        partition_of(str(e["aggregateId"]), DEFAULT_PARTITIONS)
        for e in outbox(db, settings).values()
        if e["status"] == "PENDING"
    )
    assert len(per_partition) == DEFAULT_PARTITIONS, per_partition


# Every delivery is answered 200 at once by a local receiver, and the counts are those of a
# run where each one lands at its first attempt. The tests' usual 0.5 s HTTP timeout is not
# that on a loaded machine: a delivery answered late was retried (a second settle write, one
# event left PENDING, `processed` 119 in 3 of 20 runs beside two busy loops).
HTTP_TIMEOUT_SECONDS = 10.0


def costed_relay(db: firestore.Client, settings: Settings, url: str, **overrides: object) -> Relay:
    return make_relay(
        db,
        settings,
        url,
        lock_timeout_seconds=LEASE_SECONDS,
        http_timeout_seconds=HTTP_TIMEOUT_SECONDS,
        **overrides,
    )


def test_the_meter_counts_documents_received_and_writes_sent(settings: Settings) -> None:
    db = get_db_client(settings)
    counts = meter(db)
    batch = db.batch()
    for n in range(3):
        batch.set(db.collection("things").document(f"t{n}"), {"n": n})
    batch.commit()
    things = db.collection("things")
    assert list(things.where(filter=firestore.FieldFilter("n", ">=", 1)).get())
    assert not list(things.where(filter=firestore.FieldFilter("n", ">", 9)).get())
    db.collection("things").document("t0").get()
    db.collection("things").document("missing").get()
    # An aggregation reads no document; Firestore bills one read per 1,000 entries matched,
    # at least one: an empty COUNT costs one read too.
    assert things.count(alias="n").get()[0][0].value == 3
    assert things.where(filter=firestore.FieldFilter("n", ">", 9)).count().get()[0][0].value == 0

    snapshot = counts.snapshot()
    assert snapshot["writes"] == 3 and snapshot["rpc:Commit"] == 1
    assert snapshot["reads"] == 2 + 2  # two query results, one found and one missing document
    assert snapshot["emptyQueries"] == 1 and snapshot["aggregationReads"] == 2
    assert counts.billed_reads == 4 + 1 + 2


def test_draining_costs_one_read_and_two_writes_per_event(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 120)
    relay_db = get_db_client(settings)
    counts = meter(relay_db)
    relay = costed_relay(relay_db, settings, receiver.url, batch_size=50, leases="event")
    summary = relay.run()

    assert summary["processed"] == 120
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
    # Each event read once, by the query that found it; the lease-mode records.
    assert counts.reads == 120 + MODE_READS + HEARTBEAT_READS
    assert counts.writes == 240 + MODE_WRITES + HEARTBEAT_WRITES  # its lease and its settle
    # Beyond them: one look for abandoned leases and the query that found nothing left, and
    # the two counts that look for PENDING events without a timestamp nextAttemptAt (billed
    # one read each per 1,000 PENDING events; they read no document).
    # and the lease-mode records' clock, and their sweep
    assert counts.snapshot()["emptyQueries"] == 2 + 1 + MODE_SWEEP
    assert counts.snapshot()["rpc:RunAggregationQuery"] == 2
    assert counts.snapshot()["aggregationReads"] == 2
    # (and the query that first reads Firestore's clock for the lease-mode record: empty)
    assert counts.billed_reads == 120 + 2 + 2 + MODE_READS + HEARTBEAT_READS + 1 + MODE_SWEEP


def test_with_partition_leases_each_event_costs_one_read_and_one_write(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    orders_in_every_partition(db, settings, 120, "cost-a")
    relay_db = get_db_client(settings)
    counts = meter(relay_db)
    relay = costed_relay(relay_db, settings, receiver.url, batch_size=50)  # 16 partitions
    summary = relay.run()
    assert summary["processed"] == 120
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
    # Per event one read (the page that found it) and one write (its settle); per run, what
    # does not grow with the backlog: each partition's lease read once as the run comes to
    # it (16 once, though it claims 4 at a time), claimed and released (two writes), the
    # lease documents created on the first run ever (16 creates, after the first claim read
    # its 4 missing: the others are known from their creation, not read).
    assert counts.writes == 120 + 2 * 16 + 16 + MODE_WRITES + HEARTBEAT_WRITES
    # The survey reads 2 x 16 events' partition fields (no count before the first page).
    assert counts.snapshot()["reads"] == 120 + 4 + 2 * 16 + MODE_READS + HEARTBEAT_READS
    # Beside the drain, the count of PENDING events and of those with a partition (one
    # chunk of up to 30 partitions: the two tell whether any needs healing); the survey's
    # look for a held event (none: billed one read), a page per partition (and one more
    # where a page came back full).
    assert counts.snapshot()["aggregationReads"] == 2
    assert counts.snapshot()["emptyQueries"] == 1 + MODE_SWEEP
    assert counts.snapshot()["rpc:RunQuery"] == 2 + MODE_READS + MODE_SWEEP + summary["batches"]
    relay.close()  # its lease-mode record deleted: the next relay reads only its own

    orders_in_every_partition(db, settings, 120, "cost-b")
    relay_db = get_db_client(settings)
    counts = meter(relay_db)
    assert costed_relay(relay_db, settings, receiver.url, batch_size=50).run()["processed"] == 120
    assert (
        counts.writes == 120 + 2 * 16 + MODE_WRITES + HEARTBEAT_WRITES
    )  # the lease documents exist now
    assert counts.snapshot()["reads"] == 120 + 16 + 2 * 16 + MODE_READS + HEARTBEAT_READS


def test_a_few_open_events_claim_only_their_partitions(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 1)
    with costed_relay(db, settings, receiver.url) as first:  # closed: its mode record deleted
        assert first.run()["processed"] == 1  # the leases created
    [event_id] = set(add_orders(db, settings, 1)) - {
        e for e, v in outbox(db, settings).items() if v["status"] == "PROCESSED"
    }
    relay_db = get_db_client(settings)
    counts = meter(relay_db)
    summary = costed_relay(relay_db, settings, receiver.url).run()
    assert (summary["processed"], summary["partitionsClaimed"]) == (1, 1)
    # Its settle, and its partition claimed and released: not all 16 partitions.
    assert counts.writes == 1 + 2 + MODE_WRITES + HEARTBEAT_WRITES
    # The event read twice (the survey's read naming the partitions with open events, its
    # page), one lease document; no count.
    assert counts.snapshot()["reads"] == 2 + 1 + MODE_READS + HEARTBEAT_READS
    assert "aggregationReads" not in counts.snapshot()
    assert outbox(db, settings)[event_id]["status"] == "PROCESSED"
