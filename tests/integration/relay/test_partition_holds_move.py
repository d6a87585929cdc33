"""A hold belongs to its aggregate, not to the partition its FAILED head was settled in:
however `RELAY_PARTITIONS` changes, no later event of a held aggregate is delivered, and
`outbox held` says what the relay does."""

from __future__ import annotations

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops.held import list_held, release_held
from firestore_outbox.partitions import partition_of
from tests.support.helpers import make_relay, outbox
from tests.support.ordering import add_steps


def an_aggregate(before: int, after: int) -> str:
    """An aggregate whose partition under `before` partitions is not its one under `after`
    (with fewer, not below `after` at all: its waiting events are healed into another)."""
    return next(
        name
        for name in (f"order-{n}" for n in range(1000))
        if partition_of(name, before) != partition_of(name, after)
        and (after > before or partition_of(name, before) >= after)
    )


@pytest.mark.parametrize(("before", "after"), [(16, 4), (4, 16)])
def test_no_event_is_delivered_behind_a_held_head_after_the_partition_count_changes(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
    before: int,
    after: int,
) -> None:
    held_aggregate = an_aggregate(before, after)
    monkeypatch.setenv("RELAY_PARTITIONS", str(before))  # the writers agree with the relay
    [head, *later] = add_steps(db, settings, [held_aggregate] * 3)
    receiver.respond = lambda r: ReceiverAnswer(422 if r.json()["seq"] == 0 else 200)
    make_relay(db, settings, receiver.url, partitions=before).run()
    events = outbox(db, settings)
    assert (events[head]["status"], events[head]["held"]) == ("FAILED", True)
    assert {events[e]["status"] for e in later} == {"PENDING"}

    # The count changes, writers and relays together, with the aggregate held.
    monkeypatch.setenv("RELAY_PARTITIONS", str(after))
    [newest, other] = add_steps(db, settings, [held_aggregate, "elsewhere"])
    receiver.respond = lambda r: ReceiverAnswer(200)
    make_relay(db, settings, receiver.url, partitions=after).run()
    events = outbox(db, settings)
    assert events[other]["status"] == "PROCESSED"  # the relay did run
    assert {events[e]["status"] for e in [*later, newest]} == {"PENDING"}
    assert [r.event_id for r in receiver.received if r.event_id in {*later, newest}] == []
    assert [h.aggregate_id for h in list_held(db, settings.outbox_collection)] == [held_aggregate]

    assert release_held(db, settings.outbox_collection, held_aggregate) == 1
    make_relay(db, settings, receiver.url, partitions=after).run()
    events = outbox(db, settings)
    assert {events[e]["status"] for e in [*later, newest]} == {"PROCESSED"}
    if after < before:  # healed into the one partition `newest` went to: in commit order
        delivered = [r.event_id for r in receiver.received if r.event_id in {*later, newest}]
        assert delivered == [*later, newest]
