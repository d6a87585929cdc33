"""`outbox status --json` and the backlog gauges show the same figures: one outbox with every
kind of event, read by both on the emulator; and their counts are one snapshot."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import grpc
from google.cloud import firestore

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.observability.metrics import BacklogGauges
from firestore_outbox.ops.status import backlog_reader, count_by_status
from firestore_outbox.testing.metering import intercept
from tests.support.helpers import add_raw_event
from tests.support.operator_commands import Run, prepared_outbox, run_outbox  # noqa: F401  (fixtures)


def test_status_json_shows_the_gauges_counts_and_age(
    run: Run, db: firestore.Client, settings: Settings, prepared: dict[str, Any]
) -> None:
    read = backlog_reader(db, settings.outbox_collection, lock_timeout_seconds=300, partitions=16)
    reading = BacklogGauges(read, max_age=0).reading()
    code, out, _ = run("status", "--json")

    assert code == 0 and reading is not None
    status = json.loads(out)
    counts, age = reading
    assert counts == status["counts"]  # the `outbox.backlog` gauge, status by status
    assert age is not None and status["lagSeconds"] is not None
    # `outbox.oldest_due.age`: the same oldest event, read a moment apart.
    assert abs(age - status["lagSeconds"]) < 30


class SettleAfterFirstCount(grpc.UnaryStreamClientInterceptor):  # type: ignore[misc]
    """Once the first aggregation has been answered, `settle()` runs: an event changes
    status between two of the counts, as a relay's settle does while `status` reads."""

    def __init__(self, settle: Callable[[], None]) -> None:
        self._settle: Callable[[], None] | None = settle

    def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: Any, request: Any
    ) -> Any:
        answer = list(continuation(details, request))  # the count is answered first
        if self._settle is not None and str(details.method).endswith("RunAggregationQuery"):
            settle, self._settle = self._settle, None
            settle()
        return iter(answer)


def test_the_counts_are_one_snapshot_though_an_event_settles_between_them(
    db: firestore.Client, settings: Settings
) -> None:
    add_raw_event(db, settings, "settling")
    reading = get_db_client(settings)
    ref = db.collection(settings.outbox_collection).document("settling")
    intercept(reading, SettleAfterFirstCount(lambda: ref.update({"status": "PROCESSED"})))

    counts = count_by_status(reading, settings.outbox_collection)

    assert ref.get().get("status") == "PROCESSED"  # it did settle between the counts
    # Counted once, as it stood when the first count read: not PENDING and PROCESSED both.
    assert counts == {"PENDING": 1, "PROCESSING": 0, "PROCESSED": 0, "FAILED": 0}
