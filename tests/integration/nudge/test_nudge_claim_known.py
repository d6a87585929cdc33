"""A warm relay's nudged claim (`PartitionLeases.claim_nudged`): a lease it knows free (its own
release) is claimed at once, beside the lease read, not after it; a lease changed since is
refused by the claim's precondition and the read decides: claimed again if free, left to its
holder if held."""

from __future__ import annotations

import threading
from typing import Any

from google.api_core import exceptions as google_exceptions
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import DEFAULT_PARTITIONS, partition_of
from firestore_outbox.relay import Relay
from tests.integration.nudge.test_nudge_hazard import commit
from tests.support.helpers import make_relay, outbox


def warm(
    db: firestore.Client, settings: Settings, receiver: Receiver, unique: str
) -> tuple[Relay, str, int]:
    """A relay that delivered an event of a new aggregate and released its partition."""
    aggregate = f"a-{unique}"
    partition = partition_of(aggregate, DEFAULT_PARTITIONS)
    relay = make_relay(db, settings, receiver.url, recheck_released=True)
    commit(db, settings, aggregate)
    assert relay.run(partitions={partition})["processed"] == 1
    return relay, aggregate, partition


def test_a_lease_the_relay_released_is_claimed_before_the_lease_read_is_back(
    db: firestore.Client, settings: Settings, receiver: Receiver, unique: str
) -> None:
    relay, aggregate, partition = warm(db, settings, receiver, unique)  # it released the lease

    # The lease read is held until the claim has landed: a claim that waited for the read
    # (as every nudged claim did) never comes, and the read gives up.
    leases = relay._leases
    assert leases is not None
    hold, read = leases._hold, leases._read
    claim_landed = threading.Event()
    waited: list[bool] = []

    def claim(*args: Any) -> Any:
        taken = hold(*args)
        if taken:
            claim_landed.set()
        return taken

    def read_after_the_claim(refs: Any) -> Any:
        waited.append(claim_landed.wait(10))
        return read(refs)

    leases._hold = claim  # type: ignore[method-assign]
    leases._read = read_after_the_claim  # type: ignore[method-assign]
    event = commit(db, settings, aggregate)
    summary = relay.run(partitions={partition}).to_json()
    assert waited == [True], waited
    assert (summary["processed"], summary["partitionsClaimed"]) == (1, 1), summary
    assert event in {r.event_id for r in receiver.received}
    assert outbox(db, settings)[event]["status"] == "PROCESSED"


def test_a_lease_changed_since_the_relay_knew_it_is_claimed_by_the_read(
    db: firestore.Client, settings: Settings, receiver: Receiver, unique: str
) -> None:
    relay, aggregate, partition = warm(db, settings, receiver, unique)
    # Another invocation claims and releases the partition: what the relay knows is stale.
    other = make_relay(db, settings, receiver.url, recheck_released=True)
    commit(db, settings, aggregate)
    assert other.run(partitions={partition})["processed"] == 1

    event = commit(db, settings, aggregate)
    summary = relay.run(partitions={partition}).to_json()
    assert (summary["processed"], summary["partitionsClaimed"]) == (1, 1), summary
    assert outbox(db, settings)[event]["status"] == "PROCESSED"


def test_a_lease_held_since_the_relay_knew_it_is_left_to_its_holder(
    db: firestore.Client, settings: Settings, receiver: Receiver, unique: str
) -> None:
    relay, aggregate, partition = warm(db, settings, receiver, unique)
    # Another invocation holds the partition now (a lease that outlasts the test).
    other = make_relay(db, settings, receiver.url, lock_timeout_seconds=120)
    other.store.count_at(other.store.collection, None)  # its clock's first reading
    held = other.partition_leases()
    held.read_named([partition])
    [taken] = held.claim_named("other", [partition])

    event = commit(db, settings, aggregate)
    summary = relay.run(partitions={partition}).to_json()
    assert (summary["processed"], summary["partitionsClaimed"]) == (0, 0), summary
    lease = db.collection(relay.collections.partitions).document(str(partition)).get()
    assert lease.get("holder") == "other" and lease.update_time == taken.update_time
    assert outbox(db, settings)[event]["status"] == "PENDING"  # the holder's to deliver


def test_a_lease_claimed_at_once_is_released_when_the_lease_read_fails(
    db: firestore.Client, settings: Settings, receiver: Receiver, unique: str
) -> None:
    relay, aggregate, partition = warm(db, settings, receiver, unique)
    leases = relay._leases
    assert leases is not None
    hold = leases._hold
    landed = threading.Event()

    def claim(*args: Any) -> Any:
        taken = hold(*args)
        landed.set()
        return taken

    def unavailable(_: Any) -> Any:
        assert landed.wait(10)  # the claim landed first
        raise google_exceptions.ServiceUnavailable("lease read failed")

    leases._hold = claim  # type: ignore[method-assign]
    leases._read = unavailable  # type: ignore[method-assign]
    commit(db, settings, aggregate)
    summary = relay.run(partitions={partition}).to_json()
    assert summary["status"] == "error", summary
    # Released at the run's end, not left held until it expires.
    lease = db.collection(relay.collections.partitions).document(str(partition)).get()
    assert lease.get("holder") is None, lease.to_dict()
