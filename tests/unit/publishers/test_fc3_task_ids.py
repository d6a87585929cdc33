"""The `fc3` publisher's task ids (`firestore_outbox.publishers.fc.fc3.task_id`): Function Compute's
rule for
them, and one stable, distinct id per event, so that a second invocation of an event is
refused (its publisher against a local FC 3.0 server:
tests/integration/publishers/test_fc3_publisher.py)."""

from __future__ import annotations

import pytest

from firestore_outbox.publishers.fc.fc3 import task_id


@pytest.mark.parametrize(
    "event_id",
    ["évt 1", "a/b", "x" * 127, "1234", "-", "ev-" + "9" * 123, "order.created:1"],
)
def test_every_event_id_becomes_a_task_id_fc_accepts(event_id: str) -> None:
    task = task_id(event_id)
    assert len(task) <= 128
    assert task[0].isalpha() or task[0] == "_"
    assert all(c.isascii() and (c.isalnum() or c in "_-") for c in task)


def test_task_ids_are_stable_and_distinct() -> None:
    ids = ["e-1", "E-1", "é-1", "e 1", "e_e-1", "h_" + "0" * 64, "x" * 126, "x" * 127]
    tasks = [task_id(i) for i in ids]
    assert len(set(tasks)) == len(ids)
    assert tasks == [task_id(i) for i in ids]
    assert task_id("e-1") == "e_e-1"  # readable when the id allows it
