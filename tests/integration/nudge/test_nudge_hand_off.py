"""A nudged run's re-check hands off (`firestore_outbox.relay.claim.recheck`): an event
its re-check after a release finds is nudged to a new run, not claimed again by this one. A
nudged run that claimed again kept going for as long as events kept coming into its
partitions (up to its whole budget), holding the in-process nudger (`process`) or a Function
Compute instance (`fc3`) meanwhile.

Each case forces the interleaving as `test_nudge_hazard` does: the downstream holds the
delivery of the partition's first event while a second one is committed (without a nudge of
its own), so only the re-check after the release can find it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from google.cloud import firestore

from firestore_outbox.config.shortcuts import nudger_for
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.nudge import Nudger
from firestore_outbox.nudge.message import NUDGE_TYPE
from firestore_outbox.producer.uow import FirestoreUnitOfWork
from tests.integration.nudge.test_nudge_hazard import HoldFirst, commit, same_partition
from tests.support.fc3_relay import RelayFunction
from tests.support.helpers import assert_each_processed_once, make_relay, outbox, relay_environment


def test_a_nudged_runs_recheck_hands_the_partition_off_instead_of_claiming_it_again(
    db: firestore.Client, settings: Settings, unique: str
) -> None:
    first, second, partition = same_partition(unique)
    downstream = HoldFirst()
    handed: list[frozenset[int]] = []
    with Receiver(downstream) as receiver:
        relay = make_relay(db, settings, receiver.url, recheck_released=True)
        early = commit(db, settings, first)
        summaries: list[dict[str, object]] = []
        run = threading.Thread(
            target=lambda: summaries.append(
                relay.run(partitions={partition}, hand_off=handed.append).to_json()
            )
        )
        run.start()
        assert downstream.holding.wait(20)  # the run read the partition's last page
        late = commit(db, settings, second)  # its nudge found the partition held
        downstream.go.set()
        run.join(30)
        states = {k: v["status"] for k, v in outbox(db, settings).items()}
        # The partition was released, not claimed again: the run its hand-off starts
        # claims it and delivers the event.
        after = relay.run(partitions=set().union(*handed)).to_json()

    [summary] = summaries
    assert summary["processed"] == 1 and summary["handedOff"] == 1, summary
    assert summary["partitionsClaimed"] == 1, summary
    assert handed == [frozenset({partition})]
    assert states == {early: "PROCESSED", late: "PENDING"}
    assert after["processed"] == 1 and after["partitionsClaimed"] == 1, after
    assert outbox(db, settings)[late]["status"] == "PROCESSED"
    assert [r.event_id for r in receiver.received] == [early, late]


def test_an_in_process_drain_hands_off_to_its_nudger_which_drains_again(
    db: firestore.Client, settings: Settings, unique: str
) -> None:
    with holding_first(settings, unique, "process") as (receiver, env, behind):
        nudger = nudger_for(db, settings, env)
        assert nudger is not None
        with_nudge, late = behind(db, nudger)
        assert nudger.wait_idle(30)
        nudger.close()

    # Two drains, one after the other on the nudger's thread: the commit's, then the one
    # its re-check handed the partition to (before, the first claimed it again itself).
    counts = nudger.counts
    assert (counts["requested"], counts["nudges"], counts["sent"]) == (2, 2, 2), counts
    assert_each_processed_once(db, settings, receiver, with_nudge, late)


def test_an_fc3_nudged_invocation_hands_off_to_a_new_invocation(
    db: firestore.Client, settings: Settings, unique: str
) -> None:
    _, _, partition = same_partition(unique)
    with holding_first(settings, unique, "fc3") as (receiver, env, behind):
        function = RelayFunction(env)
        with Receiver(function) as fc:
            env.update(function.caller_environment(fc.url))  # the relay nudges itself too
            nudger = nudger_for(db, settings, env)
            assert nudger is not None
            early, late = behind(db, nudger)
            function.wait()
            function.wait()  # the invocation the hand-off started, once it has
            nudger.close()

    assert function.failures == []
    assert [i.json()["type"] for i in function.invocations] == [NUDGE_TYPE, NUDGE_TYPE]
    by_count = sorted(function.summaries, key=lambda s: -int(s["handedOff"]))
    assert [(s["processed"], s["handedOff"]) for s in by_count] == [(1, 1), (1, 0)], by_count
    assert [s["nudged"] for s in by_count] == [[partition], [partition]]
    assert [r.event_id for r in receiver.received] == [early, late]


Behind = Callable[[firestore.Client, Nudger], tuple[str, str]]


@contextmanager
def holding_first(
    settings: Settings, unique: str, nudge: str
) -> Iterator[tuple[Receiver, dict[str, str], Behind]]:
    """A downstream that holds the first delivery, the relay's environment with
    `OUTBOX_NUDGE=nudge`, and `behind(db, nudger)`: commit an event with a nudge; once its
    delivery is held (its partition's last page read), one of the same partition without;
    then let the first go. Returns both event ids."""
    first, second, _ = same_partition(unique)
    downstream = HoldFirst()

    def behind(db: firestore.Client, nudger: Nudger) -> tuple[str, str]:
        event = {"eventType": "Tested", "aggregateType": "t", "payload": {}}
        with FirestoreUnitOfWork(db, settings, nudger=nudger) as uow:
            early = uow.outbox.add({**event, "aggregateId": first})
        assert downstream.holding.wait(60)
        late = commit(db, settings, second)
        downstream.go.set()
        return early, late

    with Receiver(downstream) as receiver:
        yield receiver, relay_environment(settings, receiver.url, OUTBOX_NUDGE=nudge), behind
