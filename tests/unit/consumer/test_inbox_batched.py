"""`process_in_batch` against hand-written fakes: a delivery that keeps losing the race for the
record gives up after a bounded number of rounds, as Firestore's `Aborted` (retry later)."""

from __future__ import annotations

import datetime
from typing import Any

import pytest
from google.api_core import exceptions as google_exceptions

from firestore_outbox.consumer.inbox.batched import ROUNDS, RaceLost, process_in_batch
from firestore_outbox.consumer.inbox.records import Records


class Missing:
    exists = False


class Ref:
    def get(self, timeout: float) -> Missing:
        return Missing()


class LosingBatch:
    """Every commit finds the record created by another delivery first."""

    def create(self, ref: Any, fields: Any) -> None:
        pass

    def commit(self, timeout: float) -> None:
        raise google_exceptions.AlreadyExists("another delivery created it")  # type: ignore[no-untyped-call]


class Db:
    def batch(self) -> LosingBatch:
        return LosingBatch()


def test_a_delivery_that_keeps_losing_the_race_gives_up_as_aborted() -> None:
    records = Records("c", datetime.timedelta(seconds=60), 5, datetime.timedelta(days=1))
    runs: list[int] = []
    with pytest.raises(RaceLost) as raised:
        process_in_batch(
            Db(),  # type: ignore[arg-type]
            Ref(),  # type: ignore[arg-type]
            records,
            ("s", "e-1"),
            lambda batch: runs.append(1),
            timeout=1.0,
            on_failure=lambda exc: None,
            on_takeover=lambda: None,
        )
    assert len(runs) == ROUNDS  # bounded: each round ran the effect into a batch that lost
    assert isinstance(raised.value, google_exceptions.Aborted)
