"""Partitions: a stable hash of the aggregate id, the count's validation, and the in-memory
per-aggregate order the drain keeps (with hand-made documents, no Firestore)."""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
import sys
from typing import Any

import pytest

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.shortcuts import load_relay_config
from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.cas import WriteOutcome, Written
from firestore_outbox.partitions import partition_of
from firestore_outbox.publishers.base import Outcome, PublishResult
from firestore_outbox.relay.aggregates import Aggregates, goes_on
from firestore_outbox.relay.fan_out import wanted
from tests.support.helpers import FAST, configured


def test_the_partition_is_the_sha256_prefix_modulo_the_count_in_every_process() -> None:
    # Pinned values: a change here would move every stored event to another partition.
    assert [partition_of(a, 16) for a in ("order-1", "order-2", "ü-ß", "")] == [12, 3, 2, 4]
    digest = hashlib.sha256(b"order-1").digest()
    assert partition_of("order-1", 1024) == int.from_bytes(digest[:8], "big") % 1024 == 396
    script = (
        "from firestore_outbox.partitions import partition_of; print(partition_of('order-1', 16))"
    )
    other = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123"},
    )
    assert int(other.stdout) == partition_of("order-1", 16)  # not salted like hash()
    assert {partition_of(f"order-{n}", 16) for n in range(200)} == set(range(16))


@pytest.mark.parametrize("raw", ["0", "-1", "1025", "four", "1.5"])
def test_a_bad_partition_count_is_refused_naming_the_variable(raw: str) -> None:
    with pytest.raises(ConfigError, match="RELAY_PARTITIONS"):
        Configuration.load({"RELAY_PARTITIONS": raw}).partitions()
    with pytest.raises(ConfigError, match="RELAY_PARTITIONS"):
        load_relay_config({"DOWNSTREAM_SERVICE_URL": "http://x/", "RELAY_PARTITIONS": raw})


@pytest.mark.parametrize(
    ("variable", "value"),
    [("RELAY_ORDERING", "random"), ("RELAY_FAILED_HEAD", "drop"), ("RELAY_LEASES", "none")],
)
def test_the_partitioning_choices_are_validated(variable: str, value: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        load_relay_config({"DOWNSTREAM_SERVICE_URL": "http://x/", variable: value})
    assert Configuration.load({}).partitions().count == 16


@dataclasses.dataclass
class Doc:
    id: str
    data: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return self.data


def lease_of(document: Doc) -> Any:
    event = type("E", (), {"aggregate_id": document.data["aggregateId"], "event_id": document.id})
    return type("L", (), {"event": event})


def test_one_event_per_aggregate_goes_at_a_time_and_a_retry_blocks_only_its_aggregate() -> None:
    docs = [Doc(f"{a}{n}", {"aggregateId": a}) for n in range(3) for a in "ab"]
    aggregates = Aggregates(ordered=True, skip_failed=False)
    aggregates.add(0, docs)
    first = aggregates.heads(10)
    assert [d.id for _, _, d in first] == ["a0", "b0"]
    assert aggregates.heads(10) == []  # both in flight
    aggregates.finish("a", go_on=True)  # delivered
    aggregates.finish("b", go_on=False)  # to be retried
    assert [d.id for _, _, d in aggregates.heads(10)] == ["a1"]  # b waits behind its retry
    aggregates.finish("a", go_on=False)  # held: a stops too
    assert aggregates.heads(10) == [] and aggregates.in_flight == 0
    assert aggregates.waiting() == 0  # a blocked aggregate's events are not kept


def test_the_next_event_follows_a_delivery_or_a_skipped_failure_only() -> None:
    retry = PublishResult(Outcome.RETRY, "HTTP 503")
    config = dataclasses.replace(FAST, max_attempts=3)
    assert goes_on(PublishResult(Outcome.DELIVERED), 1, config)
    assert not goes_on(retry, 1, config) and not goes_on(None, 1, config)
    assert not goes_on(retry, 3, config)  # failed for good: held
    assert goes_on(retry, 3, configured(config, failed_head="skip"))
    assert not goes_on(PublishResult(Outcome.CHANNEL, "HTTP 401"), 1, config)


def test_unordered_events_go_side_by_side_and_a_lost_settle_gives_up_the_partition() -> None:
    docs = [Doc(f"a{n}", {"aggregateId": "a"}) for n in range(3)]
    aggregates = Aggregates(ordered=False, skip_failed=True)
    aggregates.add(5, docs)
    assert len(aggregates.heads(10)) == 3
    aggregates.settled(lease_of(docs[0]), "processed", Written(WriteOutcome.LOST))
    assert aggregates.lost == {5}


def test_a_partition_counts_as_open_until_every_event_read_from_it_is_settled() -> None:
    # The drain releases a partition only once this count is 0: the next holder must not
    # find an event delivered here still PENDING.
    docs = [Doc(f"{a}{n}", {"aggregateId": a}) for n in range(2) for a in "ab"]
    aggregates = Aggregates(ordered=True, skip_failed=False)
    aggregates.add(3, docs)
    assert aggregates.open_in(3) == 4 and aggregates.ready() == 2
    a0, b0 = (d for _, _, d in aggregates.heads(10))
    aggregates.finish("a", go_on=True)  # delivered: a1 may go, a0 still settling
    aggregates.abandon(b0.id)  # never sent (not due yet): nothing to settle
    aggregates.finish("b", go_on=False)  # and b waits: b1 is dropped
    assert aggregates.open_in(3) == 2  # a0 settling, a1 queued
    aggregates.settled(lease_of(a0), "processed", Written(WriteOutcome.APPLIED))
    [(_, _, a1)] = aggregates.heads(10)
    aggregates.finish("a", go_on=True)
    assert aggregates.open_in(3) == 1
    aggregates.settled(lease_of(a1), "processed", Written(WriteOutcome.APPLIED))
    assert aggregates.open_in(3) == 0 and aggregates.waiting() == 0


def test_the_events_of_a_lost_partition_are_not_handed_out() -> None:
    docs = [Doc(f"{a}{n}", {"aggregateId": a}) for n in range(2) for a in "ab"]
    aggregates = Aggregates(ordered=True, skip_failed=False)
    aggregates.add(1, docs[:2])  # a0, b0
    aggregates.add(2, [Doc("c0", {"aggregateId": "c"})])
    aggregates.lost.add(1)
    assert [d.id for _, _, d in aggregates.heads(10)] == ["c0"]
    assert aggregates.waiting() == 0 and aggregates.open_in(1) == 0


def test_fast_config_keeps_the_defaults_of_partitioning() -> None:
    partitions = FAST.partitions
    assert (partitions.leases, partitions.ordered, partitions.failed_head) == (
        "partition",
        True,
        "hold",
    )


def test_fan_out_needs_the_function_to_invoke_and_credentials() -> None:
    base = {"DOWNSTREAM_SERVICE_URL": "http://x/", "RELAY_FAN_OUT_MAX": "2"}
    with pytest.raises(ConfigError, match="RELAY_FAN_OUT_ENDPOINT is not set"):
        load_relay_config(base)
    full = {
        **base,
        "RELAY_FAN_OUT_ENDPOINT": "https://1.cn-hangzhou.fc.aliyuncs.com",
        "RELAY_FAN_OUT_SERVICE": "s",
        "RELAY_FAN_OUT_FUNCTION": "relay",
        "ALIBABA_CLOUD_ACCESS_KEY_ID": "AKID",
    }
    with pytest.raises(ConfigError, match="ALIBABA_CLOUD_ACCESS_KEY_SECRET is not set"):
        load_relay_config(full)
    config = load_relay_config({**full, "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "k"})
    # 10,000 open events at 2,000 each call for 4 more; 16 partitions by 4 leave room for 3.
    assert wanted(10_000, config.fan_out, config.partitions) == 2  # RELAY_FAN_OUT_MAX
    more = dataclasses.replace(config.fan_out, max=9)
    assert wanted(10_000, more, config.partitions) == 3
    assert wanted(2_000, config.fan_out, config.partitions) == 0


def test_fan_out_needs_no_service_for_a_function_compute_3_function() -> None:
    config = load_relay_config(
        {
            "DOWNSTREAM_SERVICE_URL": "http://x/",
            "RELAY_FAN_OUT_MAX": "2",
            "RELAY_FAN_OUT_ENDPOINT": "https://1.cn-hangzhou.fc.aliyuncs.com",
            "RELAY_FAN_OUT_FUNCTION": "relay",
            "ALIBABA_CLOUD_ACCESS_KEY_ID": "AKID",
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "k",
        }
    )
    assert (config.fan_out.service, config.fan_out.function) == (None, "relay")
    with pytest.raises(ConfigError, match="RELAY_FAN_OUT_FUNCTION is not set"):
        load_relay_config(
            {
                "DOWNSTREAM_SERVICE_URL": "http://x/",
                "RELAY_FAN_OUT_MAX": "2",
                "RELAY_FAN_OUT_ENDPOINT": "https://1.cn-hangzhou.fc.aliyuncs.com",
            }
        )
