"""What one watchdog check costs in Firestore operations, counted on the wire: the figure
docs/watchdog.md states (29 reads with 16 partitions, no write while nothing changes)."""

from __future__ import annotations

from google.cloud import firestore

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.wiring import make_watchdog
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.metering import meter
from tests.support.helpers import add_orders, make_relay, outbox, run_until

SHARDS = 8  # the heartbeat's documents, read whether written or not
DUE_QUERIES = 2  # the oldest due event and the oldest abandoned event lease (one chunk)
COUNTS = 2  # FAILED in all, FAILED within the window (aggregations, one read each)
LEASES = 16  # the partition lease documents (RELAY_PARTITIONS 16)
INCIDENTS = 1  # the watchdog's incident record


def test_a_steady_check_reads_about_thirty_documents_and_writes_nothing(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 40)  # in most partitions: their lease documents are made
    relay = make_relay(db, settings, receiver.url)
    run_until(relay, lambda: {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"})
    leases = len(db.collection("outbox_partitions").get())
    client = get_db_client(settings)
    counts = meter(client)
    environ = {
        "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
        "FIRESTORE_PROJECT_ID": str(settings.project_id),
    }
    watchdog = make_watchdog(Configuration.load(environ), client)
    assert watchdog.check().health.ok
    counts.reset()

    assert watchdog.check().health.ok
    billed = counts.billed_reads
    print(f"watchdog check: {billed} billed reads, {counts.writes} writes ({leases} leases)")
    assert billed == SHARDS + DUE_QUERIES + COUNTS + leases + INCIDENTS
    assert leases <= LEASES and billed <= SHARDS + DUE_QUERIES + COUNTS + LEASES + INCIDENTS
    assert counts.writes == 0
