"""`Coalescer`: concurrent calls gathered into batches, each caller given its own result."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from firestore_outbox.publishers.base import Delivery, Outcome, PublishResult
from firestore_outbox.publishers.coalescer import Coalescer
from tests.support.helpers import publish_together


def delivery(n: int, body: bytes = b"{}", deadline: float | None = None) -> Delivery:
    return Delivery(f"e-{n}", "T", "/s", f"o-{n}", "2026-11-22T00:00:00Z", body, 1, deadline)


class Target:
    """Records each batch; refuses the entries whose ids are in `refuse`."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.batches: list[list[str]] = []
        self.deadlines: list[float | None] = []
        self.refuse = refuse
        self.lock = threading.Lock()

    def send(self, deliveries: Sequence[Delivery], deadline: float | None) -> list[PublishResult]:
        with self.lock:
            self.batches.append([d.event_id for d in deliveries])
            self.deadlines.append(deadline)
        return [
            PublishResult(Outcome.RETRY, f"refused {d.event_id}")
            if d.event_id in self.refuse
            else PublishResult.delivered()
            for d in deliveries
        ]


def test_concurrent_calls_share_batches_of_at_most_max_entries() -> None:
    target = Target()
    coalescer = Coalescer(target.send, max_entries=4, linger=1.0)

    results = publish_together(coalescer.publish, [delivery(n) for n in range(10)])

    assert all(r.outcome is Outcome.DELIVERED for r in results.values())
    assert sorted(len(b) for b in target.batches) == [2, 4, 4]
    assert sorted(i for b in target.batches for i in b) == sorted(results)


def test_each_caller_gets_its_own_entry_result_and_only_failed_ones_retry() -> None:
    target = Target(refuse=frozenset({"e-1", "e-4"}))
    coalescer = Coalescer(target.send, max_entries=8, linger=1.0)

    results = publish_together(coalescer.publish, [delivery(n) for n in range(6)])

    assert {i for i, r in results.items() if r.outcome is Outcome.RETRY} == {"e-1", "e-4"}
    assert results["e-4"].error == "refused e-4"
    target.refuse = frozenset()
    again = publish_together(coalescer.publish, [delivery(1), delivery(4)])
    assert all(r.outcome is Outcome.DELIVERED for r in again.values())
    assert sorted(target.batches[-1]) == ["e-1", "e-4"]  # the delivered ones were not resent


def test_a_batch_never_holds_more_than_max_bytes() -> None:
    target = Target()
    coalescer = Coalescer(target.send, max_entries=16, max_bytes=10, linger=1.0)

    publish_together(coalescer.publish, [delivery(n, b"12345") for n in range(5)])

    assert sorted(len(b) for b in target.batches) == [1, 2, 2]


def test_a_delivery_over_max_bytes_goes_alone() -> None:
    target = Target()
    coalescer = Coalescer(target.send, max_entries=16, max_bytes=4, linger=0.0)

    assert coalescer.publish(delivery(1, b"123456789")).outcome is Outcome.DELIVERED
    assert target.batches == [["e-1"]]


def test_a_batch_is_sent_by_its_earliest_deadline() -> None:
    target = Target()
    coalescer = Coalescer(target.send, max_entries=2, linger=1.0)
    soon, later = time.monotonic() + 30, time.monotonic() + 60

    publish_together(coalescer.publish, [delivery(1, deadline=later), delivery(2, deadline=soon)])

    assert target.deadlines == [soon]


def test_a_leader_whose_deadline_has_passed_does_not_linger() -> None:
    target = Target()
    coalescer = Coalescer(target.send, max_entries=16, linger=60.0)

    # With a 60 s linger this would hang the test; the deadline cuts the wait to nothing.
    coalescer.publish(delivery(1, deadline=time.monotonic() - 1))

    assert target.batches == [["e-1"]]


def test_a_send_that_raises_retries_every_entry() -> None:
    def broken(deliveries: Sequence[Delivery], deadline: float | None) -> list[PublishResult]:
        raise RuntimeError("bug with secret-value")

    coalescer = Coalescer(broken, max_entries=4, linger=1.0)
    results = publish_together(coalescer.publish, [delivery(n) for n in range(4)])

    assert {r.outcome for r in results.values()} == {Outcome.RETRY}
    assert all("secret" not in (r.error or "") for r in results.values())


def test_a_send_answering_the_wrong_number_of_results_retries_every_entry() -> None:
    coalescer = Coalescer(lambda ds, _: [PublishResult.delivered()], max_entries=4, linger=1.0)
    results = publish_together(coalescer.publish, [delivery(n) for n in range(2)])
    assert {r.outcome for r in results.values()} == {Outcome.RETRY}


def test_max_entries_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_entries"):
        Coalescer(Target().send, max_entries=0)
