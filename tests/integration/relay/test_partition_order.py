"""Per-aggregate order with partition leases, on the emulator with a real HTTP downstream:
retries block only their own aggregate, a FAILED head holds it (or not), a backlog written
by the relay of 0.2 drains in order."""

from __future__ import annotations

import datetime as dt
import random

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.ops.held import list_held, release_held
from firestore_outbox.partitions import partition_of
from tests.support.helpers import add_raw_event, make_relay, outbox, run_until
from tests.support.operator_commands import (
    Run,
    run_outbox,  # noqa: F401  (the `run` fixture)
)
from tests.support.ordering import Sequences, add_sequences, add_steps


def all_processed(db: firestore.Client, settings: Settings) -> bool:
    return all(e["status"] == "PROCESSED" for e in outbox(db, settings).values())


def test_each_aggregate_is_delivered_in_sequence_through_random_503s(
    db: firestore.Client, settings: Settings, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RELAY_PARTITIONS", "4")
    counts: dict[str, int] = {}
    add_sequences(db, settings, counts, aggregates=10, batches=3, per_batch=3)
    downstream = Sequences(0.3, random.Random(7))
    receiver.respond = downstream
    relay = make_relay(db, settings, receiver.url, partitions=4, max_attempts=100)
    summaries = run_until(relay, lambda: all_processed(db, settings), timeout=60)

    assert sum(s["retried"] for s in summaries) > 0  # the 503s did happen
    assert downstream.accepted == {a: list(range(n)) for a, n in counts.items()}
    assert (downstream.violations, downstream.duplicates) == (0, 0)
    for event in outbox(db, settings).values():
        assert event["partition"] == partition_of(event["aggregateId"], 4)


# `tenant/42`: an aggregate id the producer takes that no document id could be (a release
# once checked it as one and refused it, so `outbox held` listed what could not be released).
@pytest.mark.parametrize("aggregate", ["held", "tenant/42"])
def test_a_failed_head_holds_its_aggregate_until_released(
    db: firestore.Client, settings: Settings, receiver: Receiver, aggregate: str
) -> None:
    ids = add_steps(db, settings, [aggregate] * 3 + ["free"] * 3)
    head = {"aggregate": aggregate, "seq": 0}
    receiver.respond = lambda r: ReceiverAnswer(400 if r.json() == head else 200)
    relay = make_relay(db, settings, receiver.url)
    relay.run()
    relay.run()  # a later run does not deliver behind the hold either
    events = outbox(db, settings)
    assert [events[i]["status"] for i in ids] == ["FAILED", "PENDING", "PENDING"] + [
        "PROCESSED"
    ] * 3
    assert events[ids[0]]["held"] is True
    [held] = list_held(db, settings.outbox_collection)
    assert (held.aggregate_id, held.event_ids) == (aggregate, [ids[0]])

    assert release_held(db, settings.outbox_collection, aggregate) == 1
    relay.run()
    events = outbox(db, settings)
    assert [events[i]["status"] for i in ids[1:3]] == ["PROCESSED"] * 2
    assert events[ids[0]]["held"] is False and events[ids[0]]["heldReleasedAt"] is not None
    seqs = [r.json()["seq"] for r in receiver.received if r.json()["aggregate"] == aggregate]
    assert seqs == [0, 1, 2]
    assert list_held(db, settings.outbox_collection) == []


def test_with_skip_a_failed_head_does_not_hold_its_aggregate(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    ids = add_steps(db, settings, ["a"] * 3)
    receiver.respond = lambda r: ReceiverAnswer(422 if r.json()["seq"] == 0 else 200)
    make_relay(db, settings, receiver.url, failed_head="skip").run()
    events = outbox(db, settings)
    assert [events[i]["status"] for i in ids] == ["FAILED", "PROCESSED", "PROCESSED"]
    assert "held" not in events[ids[0]]


def test_a_backlog_written_before_partitions_drains_in_commit_order(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    # Documents as the repository of 0.2 wrote them: no partition, no sequence, one commit
    # each; one was leased by a relay of 0.2 that died (PROCESSING, lease long expired).
    written = []
    for seq in range(4):
        for agg in ("a", "b", "c"):
            event_id = f"{agg}-{seq}"
            fields = {"aggregateId": agg, "payload": {"aggregate": agg, "seq": seq}}
            if event_id == "a-0":
                old = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
                fields.update(status="PROCESSING", attempts=1, updatedAt=old)
            add_raw_event(db, settings, event_id, **fields)
            written.append(event_id)
    for event in outbox(db, settings).values():
        assert "partition" not in event and "sequence" not in event
    downstream = Sequences(0.0, random.Random(1))
    receiver.respond = downstream
    summary = make_relay(db, settings, receiver.url).run()

    assert summary["healed"] == 12 and summary["processed"] == 12, summary
    assert downstream.accepted == {agg: [0, 1, 2, 3] for agg in ("a", "b", "c")}
    events = outbox(db, settings)
    assert events["a-0"]["attempts"] == 2  # the abandoned attempt stays spent
    assert all(e["partition"] == partition_of(e["aggregateId"], 16) for e in events.values())


def test_the_held_command_lists_held_aggregates_and_releases_one(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    run: Run,
) -> None:
    [failed, later] = add_steps(db, settings, ["order-7", "order-7"])
    receiver.respond = lambda r: ReceiverAnswer(422 if r.json()["seq"] == 0 else 200)
    make_relay(db, settings, receiver.url).run()

    code, out, _ = run("held")
    assert code == 0
    assert f"agg order-7: held by {failed} (rejected after attempt 1: HTTP 422" in out
    assert out.rstrip().endswith("1 held aggregates")
    assert run("held", "--release", "order-7")[:2] == (
        0,
        "released 1 held events of aggregate order-7\n",
    )
    assert run("held", "--release", "order-7")[0] == 1  # nothing held any more
    code, _, err = run("held", "--release", "a\x07b")  # no producer writes such an id
    assert code == 2 and "AGGREGATE_ID" in err  # refused before anything is written
    make_relay(db, settings, receiver.url).run()
    assert outbox(db, settings)[later]["status"] == "PROCESSED"


def test_without_ordering_a_retried_event_does_not_hold_back_its_aggregate(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    ids = add_steps(db, settings, ["a"] * 3)
    receiver.respond = lambda r: ReceiverAnswer(503 if r.json()["seq"] == 0 else 200)
    summary = make_relay(db, settings, receiver.url, ordering="none").run()
    events = outbox(db, settings)
    assert [events[i]["status"] for i in ids] == ["PENDING", "PROCESSED", "PROCESSED"]
    assert summary["retried"] == 1
    # With order (the default) the same answers leave the later ones waiting.
    ids = add_steps(db, settings, ["b"] * 3)
    receiver.respond = lambda r: ReceiverAnswer(
        503 if r.json() == {"aggregate": "b", "seq": 0} else 200
    )
    make_relay(db, settings, receiver.url, backoff_base_seconds=30, backoff_max_seconds=60).run()
    events = outbox(db, settings)
    assert [events[i]["status"] for i in ids] == ["PENDING"] * 3
