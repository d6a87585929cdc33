"""A nudged run's start (`firestore_outbox.relay.claim.nudged`): its first pages are
read beside the lease read, before the claim. Each case forces its interleaving: a page read
before another invocation's release is read again, not delivered twice; a partition with no
open event is not claimed; a run of the other lease mode makes it release and drain nothing."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.partitions import DEFAULT_PARTITIONS, partition_of
from tests.integration.nudge.test_nudge_hazard import HoldFirst, commit
from tests.integration.relay.test_lease_mode_switch import SLOW, Gate
from tests.support.helpers import make_relay, outbox


def test_a_page_read_before_another_invocations_release_is_read_again(
    db: firestore.Client, settings: Settings, unique: str
) -> None:
    aggregate = f"a-{unique}"
    partition = partition_of(aggregate, DEFAULT_PARTITIONS)
    downstream = HoldFirst()
    with Receiver(downstream) as receiver:
        holder = make_relay(db, settings, receiver.url, recheck_released=True)
        nudged = make_relay(db, settings, receiver.url, recheck_released=True)
        event = commit(db, settings, aggregate)
        summaries: list[Any] = []
        run = threading.Thread(target=lambda: summaries.append(holder.run()))
        run.start()
        assert downstream.holding.wait(20)  # the holder is delivering the event

        # The nudged run's page (the event still PENDING) comes back first; only then
        # does the holder settle and release, and the nudged run reads the lease: free.
        page_read = threading.Event()
        store_run_at = nudged.store.run_at

        def run_at(query: Any) -> Any:
            answer = store_run_at(query)
            page_read.set()
            return answer

        leases = nudged._leases = nudged.partition_leases()
        read_leases = leases._read

        def after_the_release(refs: Any) -> Any:
            assert page_read.wait(20)
            downstream.go.set()
            run.join(30)
            return read_leases(refs)

        nudged.store.run_at = run_at  # type: ignore[method-assign]
        leases._read = after_the_release  # type: ignore[method-assign]
        summary = nudged.run(partitions={partition}).to_json()

    assert summaries[0]["processed"] == 1, summaries
    assert summary["status"] == "ok" and summary["processed"] == 0, summary
    assert Counter(r.event_id for r in receiver.received) == {event: 1}  # not twice
    assert outbox(db, settings)[event]["status"] == "PROCESSED"


def test_a_nudged_partition_without_an_open_event_is_not_claimed(
    db: firestore.Client, settings: Settings, receiver: Receiver, unique: str
) -> None:
    aggregate = f"a-{unique}"
    event = commit(db, settings, aggregate)
    partition = partition_of(aggregate, DEFAULT_PARTITIONS)
    relay = make_relay(db, settings, receiver.url, recheck_released=True)
    assert relay.run(partitions={partition})["processed"] == 1
    # A relay that does not know the lease free waits for the page: empty, no claim.
    other = make_relay(db, settings, receiver.url, recheck_released=True)
    again = other.run(partitions={partition}).to_json()
    assert (again["processed"], again["partitionsClaimed"]) == (0, 0), again
    # The relay that released it knows it free and claims it beside the page (the price of
    # publishing a round trip sooner: a claim and a release when the page comes back empty).
    warm = relay.run(partitions={partition}).to_json()
    assert (warm["processed"], warm["partitionsClaimed"]) == (0, 1), warm
    assert [r.event_id for r in receiver.received] == [event]


def test_a_nudged_run_waits_for_a_run_of_the_other_lease_mode(
    db: firestore.Client, settings: Settings, receiver: Receiver, unique: str
) -> None:
    first = f"a-{unique}"
    gate = Gate()
    with Receiver(gate) as slow:
        early = commit(db, settings, first)
        per_event = make_relay(db, settings, slow.url, leases="event", **SLOW)
        run = threading.Thread(target=per_event.run)
        run.start()
        try:
            assert slow.wait_for(1, timeout=30)  # the per-event relay is delivering
            late = commit(db, settings, f"b-{unique}")
            nudged = make_relay(db, settings, receiver.url, recheck_released=True, **SLOW)
            partitions = {partition_of(f"b-{unique}", DEFAULT_PARTITIONS)}
            waited = nudged.run(partitions=partitions).to_json()
        finally:
            gate.opened.set()
            run.join(30)

    assert (waited["stoppedBy"], waited["waitingFor"], waited["processed"]) == (
        "mode",
        "event",
        0,
    ), waited
    assert receiver.received == []
    leases = nudged.partition_leases()
    leases.read_named(partitions)
    assert all(leases._known[p].expires is None for p in partitions)  # released
    states = outbox(db, settings)
    assert states[early]["status"] == "PROCESSED" and late in states
