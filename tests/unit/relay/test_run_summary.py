"""`RunSummary`: typed for code, the same JSON object as before for logs and scripts."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest

from firestore_outbox.errors import ConfigError
from firestore_outbox.relay.lease import Settled
from firestore_outbox.relay.partition_settings import (
    FailedHead,
    LeaseMode,
    Ordering,
    PartitionSettings,
)
from firestore_outbox.relay.summary import (
    RUN_COUNTS,
    Count,
    RunStatus,
    RunSummary,
    StopReason,
    finish_summary,
)


def test_the_json_carries_every_count_and_nothing_the_run_did_not_set() -> None:
    tally = Counter(processed=3, lostLeases=1, partitionsClaimed=2, notACount=9)
    summary = finish_summary(tally, "run-1", 0.0, stopped_by=StopReason.BUDGET)
    assert (summary.processed, summary.lost_leases, summary.partitions_claimed) == (3, 1, 2)
    assert summary.status is RunStatus.OK and summary.stopped_by is StopReason.BUDGET
    assert list(summary.to_json()) == [
        "status",
        "stoppedBy",
        *RUN_COUNTS,
        "instanceId",
        "durationMs",
    ]
    assert json.loads(json.dumps(summary.to_json()))["stoppedBy"] == "budget"
    assert summary["processed"] == 3 and dict(summary) == summary.to_json()
    assert "notACount" not in summary and "error" not in summary


def test_a_firestore_error_makes_the_status_error_and_says_why() -> None:
    summary = finish_summary(
        Counter(), "run-2", 0.0, stopped_by=StopReason.DRAINED, error="Firestore: 503"
    )
    assert not summary.ok and summary.stopped_by is StopReason.ERROR
    assert summary.to_json()["status"] == "error" and summary["error"] == "Firestore: 503"


def test_the_summary_cannot_be_changed_behind_the_json() -> None:
    summary = RunSummary.from_tally(
        {}, status=RunStatus.OK, stopped_by=StopReason.DRAINED, instance_id="i", duration_ms=1
    )
    with pytest.raises(AttributeError):
        summary.processed = 5  # type: ignore[misc]
    copy = summary.to_json()
    copy["processed"] = 5
    assert summary["processed"] == 0


def test_modes_given_as_text_become_their_enums_and_bad_ones_name_the_variable() -> None:
    config = PartitionSettings(leases="event", failed_head="skip", ordering="none")  # type: ignore[arg-type]
    assert config.leases is LeaseMode.EVENT and config.failed_head is FailedHead.SKIP
    assert config.ordering is Ordering.NONE and not config.ordered
    with pytest.raises(ConfigError, match="RELAY_LEASES must be partition or event"):
        PartitionSettings(leases="events")  # type: ignore[arg-type]


def test_every_count_of_a_run_is_a_summary_field_under_its_json_name() -> None:
    fields = {f.name for f in dataclasses.fields(RunSummary)}
    assert {count.attribute for count in RUN_COUNTS} <= fields
    assert Count.LOST_LEASES.attribute == "lost_leases" and Count.LAG_MS.attribute == "lag_ms"
    tally: Counter[Count] = Counter({Count.LOST_LEASES: 2, Count.SETTLE_RETRIES: 5})
    summary = RunSummary.from_tally(
        tally,
        status=RunStatus.OK,
        stopped_by=StopReason.DRAINED,
        instance_id="i",
        duration_ms=1,
    )
    assert summary.lost_leases == 2 and summary["lostLeases"] == 2
    assert "settleRetries" not in summary  # the settler's own: logged, not summarized
    assert json.loads(json.dumps(summary.to_json()))["lostLeases"] == 2


def test_a_settle_is_counted_under_its_own_name() -> None:
    for settled in Settled:
        assert settled.tallied.value == settled.value
