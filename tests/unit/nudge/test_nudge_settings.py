"""`OUTBOX_NUDGE`'s settings and the nudge's wire: what a producer sends, what the relay
handler reads back."""

from __future__ import annotations

import json

import pytest

from firestore_outbox.config.shortcuts import load_nudge_settings
from firestore_outbox.errors import ConfigError
from firestore_outbox.nudge import NudgeMode
from firestore_outbox.nudge.message import NUDGE_TYPE, nudge_body, nudge_delivery, nudged_partitions
from firestore_outbox.publishers.fc.fc3 import task_id


def test_nudges_are_off_by_default_and_each_target_is_named() -> None:
    assert load_nudge_settings({}).mode is NudgeMode.OFF
    relay = {"DOWNSTREAM_SERVICE_URL": "http://r/events"}  # what `process` drains with
    for mode in ("off", "fc3", "process", "FC3"):
        nudge = load_nudge_settings({"OUTBOX_NUDGE": mode, **relay})
        assert nudge.mode.value == mode.lower()
    assert load_nudge_settings({"OUTBOX_NUDGE": "process", **relay}).relay is not None
    assert load_nudge_settings({"OUTBOX_NUDGE": "fc3"}).fan_out is not None
    http = load_nudge_settings({"OUTBOX_NUDGE": "http", "OUTBOX_NUDGE_URL": "http://r/nudge"})
    assert http.url == "http://r/nudge"


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"OUTBOX_NUDGE": "sometimes"}, "OUTBOX_NUDGE"),
        ({"OUTBOX_NUDGE": "http"}, "OUTBOX_NUDGE_URL"),
        ({"OUTBOX_NUDGE": "http", "OUTBOX_NUDGE_URL": "ftp://x"}, "OUTBOX_NUDGE_URL"),
    ],
)
def test_a_bad_nudge_setting_names_its_variable(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=named):
        load_nudge_settings(environ)


def test_the_http_body_is_an_event_the_relay_handler_reads_back() -> None:
    delivery = nudge_delivery([3, 1, 3], "//test", 0.0)
    event = json.loads(nudge_body(delivery))
    assert event["type"] == NUDGE_TYPE and event["data"] == {"partitions": [1, 3]}
    assert nudged_partitions(event) == [1, 3]
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
    assert nudged_partitions(trigger) == partitions


def test_the_interval_after_a_nudge_stretches_with_the_commits_it_carried() -> None:
    from firestore_outbox.nudge.sender import MAX_STRETCH, stretch

    assert stretch(1) == stretch(4) == 1.0  # a few commits: no more wait than configured
    assert stretch(8) == 2.0
    assert stretch(1000) == MAX_STRETCH  # a busy producer: a few invocations a second
