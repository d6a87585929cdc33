"""The relay handler takes a nudge body as input from outside, on the real emulator: each
entry must be a partition of this relay (a whole number in `[0, RELAY_PARTITIONS)`), the
rest is refused with a reason in the summary, never raised, and a nudge with nothing left
asks Firestore nothing (a cold instance, which has never heard Firestore's clock, included).
A producer of another partition count is refused whole, and logged once a minute."""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.errors import InvalidInput
from firestore_outbox.firestore.clock import ClockNotSet
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.function_compute import RelayFunction
from firestore_outbox.nudge.message import NUDGE_TYPE
from firestore_outbox.partitions import DEFAULT_PARTITIONS
from tests.support.fc_invocation import (
    clean_environment,  # noqa: F401  (the `environment` fixture)
    configured_relay,  # noqa: F401  (the relay configured for the emulator)
    fc_context,
)
from tests.support.helpers import add_orders, make_relay, outbox

PARTITION_COLLECTION = "outbox_partitions"


def nudge_event(**data: Any) -> bytes:
    """A nudge as Function Compute hands it over: the CloudEvent's JSON, as bytes."""
    return json.dumps({"specversion": "1.0", "type": NUDGE_TYPE, "data": data}).encode()


def written_by_relays(db: firestore.Client) -> list[str]:
    """The lease and lease-mode documents any relay wrote."""
    return [
        d.reference.path
        for name in (PARTITION_COLLECTION, f"{PARTITION_COLLECTION}_mode")
        for d in db.collection(name).get()
    ]


@pytest.mark.parametrize(
    ("data", "refused", "reason"),
    [
        ({"partitions": [2**63]}, 1, "partitions[0] is not below RELAY_PARTITIONS (16)"),
        ({"partitions": [-1, 1.5, "3", None, True]}, 5, "partitions[0] is negative"),
        ({"partitions": "0-15"}, 1, "partitions is not a list"),
        ({}, 1, "partitions is not a list"),
        ({"partitions": list(range(10_000))}, 10_000, "more than RELAY_PARTITIONS (16)"),
        ({"partitions": [20]}, 1, "partitions[0] is not below RELAY_PARTITIONS (16)"),
        ({"partitions": [3], "partitionCount": 32}, 1, "partitionCount (32) is not"),
    ],
)
@pytest.mark.usefixtures("configured_relay")
def test_a_nudge_with_no_partition_of_this_relay_is_refused_and_asks_firestore_nothing(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    data: dict[str, Any],
    refused: int,
    reason: str,
) -> None:
    events = add_orders(db, settings, 3)
    summary = RelayFunction().handler(nudge_event(**data), fc_context("cold"))  # a cold instance

    assert summary["status"] == "refused" and summary["stoppedBy"] == "refused", summary
    assert summary["nudgeRefused"] == refused and reason in summary["nudgeRefusal"], summary
    assert summary["nudged"] == [] and summary["processed"] == 0
    assert written_by_relays(db) == []  # no lease, no lease-mode record: nothing was run
    assert {outbox(db, settings)[e]["status"] for e in events} == {"PENDING"}
    assert receiver.received == []


@pytest.mark.usefixtures("configured_relay")
def test_a_nudge_of_valid_and_invalid_partitions_drains_the_valid_ones_and_counts_the_rest(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 6)
    events = outbox(db, settings)
    partition = min(e["partition"] for e in events.values())
    inside = {k for k, e in events.items() if e["partition"] == partition}
    body = nudge_event(partitions=[partition, 2**63, partition, -4])

    summary = RelayFunction().handler(body, fc_context("cold"))

    assert summary["status"] == "ok", summary
    assert summary["nudged"] == [partition]  # deduplicated
    assert summary["nudgeRefused"] == 2, summary
    assert summary["nudgeRefusal"] == (
        "partitions[1] is not below RELAY_PARTITIONS (16); partitions[3] is negative"
    )
    assert summary["processed"] == len(inside), summary
    assert {r.event_id for r in receiver.received} == inside


@pytest.mark.usefixtures("configured_relay")
def test_a_cold_instance_handles_a_nudge_of_an_empty_partition_without_a_clock(
    db: firestore.Client, settings: Settings
) -> None:
    # No event anywhere: the nudged partition's first page is empty, nothing is claimed.
    for n in range(DEFAULT_PARTITIONS):
        summary = RelayFunction().handler(nudge_event(partitions=[n]), fc_context(f"cold-{n}"))
        assert summary["status"] == "ok" and summary["stoppedBy"] == "drained", summary
        assert summary["partitionsClaimed"] == 0 and "nudgeRefused" not in summary


@pytest.mark.usefixtures("configured_relay")
def test_a_producer_of_another_partition_count_is_logged_once_a_minute_and_never_followed(
    db: firestore.Client, settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    events = add_orders(db, settings, 2)
    function = RelayFunction()  # one warm instance, nudged again and again
    with caplog.at_level(logging.WARNING, logger="firestore_outbox.nudge"):
        summaries = [
            function.handler(nudge_event(partitions=[1, 20], partitionCount=32), fc_context())
            for _ in range(3)
        ]
    assert [s["status"] for s in summaries] == ["refused"] * 3
    lines = [r.getMessage() for r in caplog.records if "partitionCount 32" in r.getMessage()]
    assert len(lines) == 1 and "RELAY_PARTITIONS=16" in lines[0], lines
    assert written_by_relays(db) == []  # partition 20's lease (its layout's) never claimed
    assert {outbox(db, settings)[e]["status"] for e in events} == {"PENDING"}


def test_a_cold_relay_claims_an_empty_nudge_without_reading_a_clock_it_never_set(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    # The claim of a nudge that named nothing read Firestore's clock, which a cold relay has
    # only once an answer came back (its mode record's, racing beside): ClockNotSet, at times.
    relay = make_relay(db, settings, receiver.url)
    with pytest.raises(ClockNotSet):
        relay.store.clock.earliest()  # cold: no answer heard yet
    assert relay.partition_leases().claim_named("cold", []) == []
    summary = relay.run(partitions=[]).to_json()
    assert summary["status"] == "ok" and summary["partitionsClaimed"] == 0, summary


def test_relay_run_refuses_partitions_outside_its_own_before_reading_anything(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    relay = make_relay(db, settings, receiver.url)
    for bad in ([16], [-1], [2**63], [True]):
        with pytest.raises(InvalidInput, match="partitions must be whole numbers from 0 to 15"):
            relay.run(partitions=bad)
    assert written_by_relays(db) == []


def test_a_nudge_of_every_partition_reads_on_no_more_threads_than_the_relay_publishes_on(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 40)  # events in most of the 16 partitions
    readers: list[int] = []

    def count_readers(_: Received) -> ReceiverAnswer:  # while the run is under way
        readers.append(sum(t.name.startswith("relay-pages") for t in threading.enumerate()))
        return ReceiverAnswer(200)

    receiver.respond = count_readers
    relay = make_relay(db, settings, receiver.url, concurrency=2, partitions_per_claim=2)
    summary = relay.run(partitions=range(DEFAULT_PARTITIONS)).to_json()

    assert summary["status"] == "ok" and summary["processed"] == 40, summary
    assert readers and max(readers) <= 2, readers  # (16 before: one per named partition)
