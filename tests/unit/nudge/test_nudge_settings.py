"""`OUTBOX_NUDGE`'s settings and the nudge's wire: what a producer sends, what the relay
handler reads back."""

from __future__ import annotations

import json

import pytest

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.shortcuts import load_nudge_settings
from firestore_outbox.errors import ConfigError
from firestore_outbox.nudge import NudgeMode
from firestore_outbox.nudge.message import (
    NUDGE_TYPE,
    ForeignCounts,
    nudge_body,
    nudge_delivery,
    nudged_partitions,
    read_nudge,
)
from firestore_outbox.publishers.fc.fc3 import task_id

SECRET = "nudge-secret-0123456789"
SIGNED = {"OUTBOX_NUDGE_SECRET": SECRET}


def test_nudges_are_off_by_default_and_each_target_is_named() -> None:
    assert load_nudge_settings({}).mode is NudgeMode.OFF
    relay = {"DOWNSTREAM_SERVICE_URL": "http://r/events"}  # what `process` drains with
    for mode in ("off", "fc3", "process", "FC3"):
        nudge = load_nudge_settings({"OUTBOX_NUDGE": mode, **relay})
        assert nudge.mode.value == mode.lower()
    assert load_nudge_settings({"OUTBOX_NUDGE": "process", **relay}).relay is not None
    assert load_nudge_settings({"OUTBOX_NUDGE": "fc3"}).fan_out is not None
    http = load_nudge_settings(
        {"OUTBOX_NUDGE": "http", "OUTBOX_NUDGE_URL": "http://r/nudge", **SIGNED}
    )
    assert http.url == "http://r/nudge" and http.secrets == (SECRET,)
    assert SECRET not in repr(http)


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OUTBOX_NUDGE": "sometimes"}, "OUTBOX_NUDGE"),
        ({"OUTBOX_NUDGE": "http", **SIGNED}, "OUTBOX_NUDGE_URL"),
        ({"OUTBOX_NUDGE": "http", "OUTBOX_NUDGE_URL": "ftp://x", **SIGNED}, "OUTBOX_NUDGE_URL"),
        # The relay behind an HTTP trigger refuses unsigned nudges: no secret, no sender.
        ({"OUTBOX_NUDGE": "http", "OUTBOX_NUDGE_URL": "http://r/nudge"}, "OUTBOX_NUDGE_SECRET"),
        (
            {
                "OUTBOX_NUDGE": "http",
                "OUTBOX_NUDGE_URL": "http://r/",
                "OUTBOX_NUDGE_SECRET": "short",
            },
            "OUTBOX_NUDGE_SECRET",
        ),
    ],
)
def test_a_bad_nudge_setting_names_its_variable(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named) as raised:
        load_nudge_settings(environ)
    assert "short" not in str(raised.value)  # a secret is never echoed


def test_the_http_body_is_an_event_the_relay_handler_reads_back() -> None:
    delivery = nudge_delivery([3, 1, 3], "//test", 0.0)
    event = json.loads(nudge_body(delivery))
    assert event["type"] == NUDGE_TYPE and event["data"] == {"partitions": [1, 3]}
    assert nudged_partitions(event, 16) == [1, 3]
    assert task_id(delivery.event_id).startswith("e_nudge-")  # a valid FC task id


def test_a_hand_off_has_a_task_id_of_its_own_where_producers_nudges_share_one() -> None:
    shared = nudge_delivery([2], "//test", 0.0).event_id  # the 0.2 s window's
    own = {nudge_delivery([2], "//test", 0.0, unique=True).event_id for _ in range(2)}
    assert len(own) == 2 and shared not in own
    assert all(task_id(i).startswith("e_nudge-") for i in own)


@pytest.mark.parametrize(
    ("trigger", "partitions"),
    [
        ({"triggerName": "relay-timer"}, None),
        ("not a dict", None),
        ({"type": NUDGE_TYPE}, []),
        ({"type": NUDGE_TYPE, "data": {"partitions": [2, "x", -1, True, 2]}}, [2]),
    ],
)
def test_only_a_nudge_names_partitions(trigger: object, partitions: list[int] | None) -> None:
    assert nudged_partitions(trigger, 16) == partitions


def nudge(**data: object) -> dict[str, object]:
    return {"type": NUDGE_TYPE, "data": data}


@pytest.mark.parametrize(
    ("data", "partitions", "refused", "reason"),
    [
        ({"partitions": [2**63, 3]}, [3], 1, "partitions[0] is not below RELAY_PARTITIONS (16)"),
        ({"partitions": [16, 15, 15]}, [15], 1, "partitions[0] is not below RELAY_PARTITIONS"),
        ({"partitions": [-1, 1.5, "7", None]}, [], 4, "partitions[0] is negative; partitions[1]"),
        ({"partitions": "0,1"}, [], 1, "partitions is not a list"),
        ({"partitions": []}, [], 1, "partitions is empty"),
        ({"partitions": list(range(10_000))}, [], 10_000, "10000 entries, more than"),
        ({"partitions": [1], "partitionCount": 32}, [], 1, "partitionCount (32) is not"),
        ({"partitions": [1], "partitionCount": "x"}, [], 1, "partitionCount (unusable)"),
        ({"partitions": [1, 0], "partitionCount": 16}, [0, 1], 0, None),
    ],
)
def test_a_nudge_is_read_within_the_relays_partitions_and_the_rest_refused_with_a_reason(
    data: dict[str, object], partitions: list[int], refused: int, reason: str | None
) -> None:
    read = read_nudge(nudge(**data), 16)
    assert read is not None
    assert (read.partitions, read.refused) == (partitions, refused)
    assert (read.reason is None) if reason is None else reason in str(read.reason)


def test_a_refusal_never_echoes_the_value_it_refused() -> None:
    read = read_nudge(nudge(partitions=["secret-token", 99]), 16)
    assert read is not None and "secret-token" not in str(read.reason)
    assert "99" not in str(read.reason)


def test_a_producer_of_another_count_is_logged_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    foreign = read_nudge(nudge(partitions=[20], partitionCount=32), 16)
    assert foreign is not None and foreign.foreign_count == 32
    counts = ForeignCounts(every=60.0)
    with caplog.at_level("WARNING", logger="firestore_outbox.nudge"):
        logged = [counts.saw(foreign, 16) for _ in range(5)]
    assert logged == [True, False, False, False, False]
    assert counts.suppressed == 4
    [line] = [r for r in caplog.records if "partitionCount 32" in r.getMessage()]
    assert "RELAY_PARTITIONS=16" in line.getMessage()
    other = read_nudge(nudge(partitions=[20]), 16)  # out of range, no count: not foreign
    assert other is not None and not ForeignCounts().saw(other, 16)


def test_a_nudge_carries_its_producers_partition_count() -> None:
    event = json.loads(nudge_body(nudge_delivery([1], "//test", 0.0, count=32)))
    assert event["data"] == {"partitions": [1], "partitionCount": 32}
    read = read_nudge(event, 16)
    assert read is not None and read.partitions == [] and read.foreign_count == 32


def test_the_interval_after_a_nudge_stretches_with_the_commits_it_carried() -> None:
    from firestore_outbox.nudge.sender import MAX_STRETCH, stretch

    assert stretch(1) == stretch(4) == 1.0  # a few commits: no more wait than configured
    assert stretch(8) == 2.0
    assert stretch(1000) == MAX_STRETCH  # a busy producer: a few invocations a second


def test_the_nudge_secret_is_a_secret_masked_wherever_it_turns_up() -> None:
    other = "whsec_" + "b3RoZXItbnVkZ2Utc2VjcmV0LTAx"
    configuration = Configuration.load({"OUTBOX_NUDGE_SECRET": f"{SECRET}, {other}"})
    assert {SECRET, other} <= set(configuration.secrets())
    assert "OUTBOX_NUDGE_SECRET" in Configuration.SECRET_VARIABLES  # the preview hides it
    masked = configuration.mask(f"signed with {SECRET} and {other}")
    assert SECRET not in masked and other not in masked
    assert configuration.nudge_secrets() == (SECRET, other)
