"""A warm relay's lease-mode record (`firestore_outbox.relay.run.mode_records`): kept for
its next runs; moved on, `since` kept, when a run needs more (a relay of the other mode that
recorded after it still waits); written anew under an id of its own once it lapsed, the old
one deleted in the same commit."""

from __future__ import annotations

import dataclasses
import datetime

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay import Relay
from firestore_outbox.relay.run import mode_records
from firestore_outbox.testing.metering import meter
from tests.support.helpers import add_orders, make_relay


def records(db: firestore.Client, relay: Relay) -> dict[str, dict]:
    collection = db.collection(relay.collections.partition_modes)
    return {d.id: d.to_dict() for d in collection.stream()}


def shorten_known_record(relay: Relay, by: datetime.timedelta) -> None:
    """Make the relay know its record's `until` as `by` earlier (the document keeps its own)."""
    record = relay._mode._record
    assert record is not None
    relay._mode._record = dataclasses.replace(record, until=record.until - by)


def test_a_record_moved_on_keeps_its_place_before_a_relay_of_the_other_mode(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    relay_db = get_db_client(settings)
    counts = meter(relay_db)
    relay = make_relay(relay_db, settings, receiver.url)
    add_orders(db, settings, 2)
    assert relay.run()["processed"] == 2
    [(ours, first)] = records(db, relay).items()
    # A per-event relay comes after it: it waits.
    other = make_relay(db, settings, receiver.url, leases="event")
    add_orders(db, settings, 1)
    assert other.run()["stoppedBy"] == "mode"

    # A run the record covers, for its costs; then one that needs more than it covers (no
    # margin kept): it moves `until` on with one write more, reads nothing more for it.
    counts.reset()
    assert relay.run()["processed"] == 1
    covered = counts.snapshot()
    shorten_known_record(relay, datetime.timedelta(seconds=mode_records.KEEP_SECONDS + 1))
    monkeypatch.setattr(mode_records, "KEEP_SECONDS", 0.0)
    add_orders(db, settings, 1)
    counts.reset()
    assert relay.run()["processed"] == 1
    moving = counts.snapshot()
    assert moving["writes"] == covered["writes"] + 1
    assert moving["reads"] == covered["reads"]
    assert moving["rpc:RunQuery"] == covered["rpc:RunQuery"]
    moved = records(db, relay)[ours]
    assert moved["since"] == first["since"] and moved["until"] != first["until"]
    assert relay._mode._record is not None and moved["until"] == relay._mode._record.until
    assert other.run()["stoppedBy"] == "mode"  # still after it


def test_a_lapsed_record_is_written_anew_and_the_old_one_deleted(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    relay = make_relay(db, settings, receiver.url)
    add_orders(db, settings, 1)
    assert relay.run()["processed"] == 1
    [old] = records(db, relay)
    # The relay was frozen past its record's `until` (as known here; the document keeps its
    # own, so that the test sees it deleted, not lapsed).
    shorten_known_record(relay, datetime.timedelta(days=1))
    add_orders(db, settings, 1)
    assert relay.run()["processed"] == 1
    [new] = records(db, relay)
    assert new != old


def test_a_closed_relay_deletes_its_record_unless_a_run_left_a_lease(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    clean = make_relay(db, settings, receiver.url)
    add_orders(db, settings, 1)
    assert clean.run()["processed"] == 1
    assert len(records(db, clean)) == 1
    clean.close()
    assert records(db, clean) == {}

    unclean = make_relay(db, settings, receiver.url)
    add_orders(db, settings, 1)
    assert unclean.run()["processed"] == 1
    unclean._mode.leave(clean=False)  # as a run that left a lease behind would
    unclean._mode._running += 1  # (balanced: that run took the record too)
    unclean.close()
    assert len(records(db, unclean)) == 1  # it lapses by itself, after that lease


def nudged_partition(db: firestore.Client, settings: Settings) -> int:
    """The partition of a new order's event (the only one PENDING)."""
    add_orders(db, settings, 1)
    outbox = db.collection(settings.outbox_collection)
    [event] = outbox.where(filter=firestore.FieldFilter("status", "==", "PENDING")).get()
    return int(event.get("partition"))


def test_a_cold_nudged_invocations_record_lapses_keep_seconds_after_its_run(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    # A cold instance (a new relay) nudged once, never invoked again, never closed.
    relay = make_relay(db, settings, receiver.url)
    assert relay.run(partitions=[nudged_partition(db, settings)])["processed"] == 1
    [record] = db.collection(relay.collections.partition_modes).get()
    left = record.get("until") - record.update_time  # how long it outlives its run
    assert left <= datetime.timedelta(seconds=mode_records.KEEP_SECONDS + 1), left
    # (it was taken for budget + lock timeout + KEEP_SECONDS: 93 s here)
    # The instance nudged again: the record moved on (one write beside the claim) and used.
    add_orders(db, settings, 1)
    again = relay.run(partitions=list(range(relay.config.partitions.count)))
    assert again["processed"] == 1 and again["stoppedBy"] != "mode"
    assert len(records(db, relay)) == 1


def test_records_of_cold_nudged_invocations_are_swept_once_lapsed(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Records lapse at once after a clean nudged run: each cold relay that writes a new
    # record sweeps the lapsed ones when its run ends.
    monkeypatch.setattr(mode_records, "KEEP_SECONDS", 0.0)
    collection = db.collection("outbox_partitions_mode")
    seen = []
    for _ in range(3 * mode_records.SWEEP_LIMIT // 2):  # 30 cold invocations
        relay = make_relay(db, settings, receiver.url)
        assert relay.run(partitions=[nudged_partition(db, settings)])["processed"] == 1
        seen.append(len(collection.get()))
    assert max(seen) <= 2, seen  # its own, and at most the one before it not yet lapsed
