"""The envelope runs put around their Firestore calls (`LeaseStore.bounded`), with several
runs under way at once: `OUTBOX_NUDGE=process` drains disjoint partitions in parallel on
one relay, so one store. Before, each run set the one bound and reset it when it ended: the
first run to end left the others unbounded, and the last to start moved the others'."""

from __future__ import annotations

import time
from typing import Any

from firestore_outbox.relay.store import MIN_CALL_SECONDS, LeaseStore


class FakeDb:
    def collection(self, name: str) -> Any:
        return name


def store() -> LeaseStore:
    return LeaseStore(FakeDb(), "outbox", timeout=10.0)  # type: ignore[arg-type]


def test_one_run_bounds_the_calls_by_its_envelope_and_lifts_it_when_done() -> None:
    lease_store = store()
    assert lease_store.timeout == 10.0
    with lease_store.bounded(time.monotonic() + 2.0):
        assert 1.0 < lease_store.timeout <= 2.0
    assert lease_store.timeout == 10.0


def test_a_run_that_ends_does_not_lift_the_bound_of_one_still_under_way() -> None:
    lease_store = store()
    now = time.monotonic()
    with lease_store.bounded(now + 3.0):  # the run under way
        with lease_store.bounded(now + 1.0):  # another, started and ended inside it
            assert 2.0 < lease_store.timeout <= 3.0  # nor cut short by the earlier end
        assert 2.0 < lease_store.timeout <= 3.0  # still bounded after the other ended
    assert lease_store.timeout == 10.0


def test_runs_that_overlap_without_nesting_keep_a_bound_until_the_last_ends() -> None:
    lease_store = store()
    now = time.monotonic()
    first = lease_store.bounded(now + 1.0)
    second = lease_store.bounded(now + 0.0)  # its budget spent: the minimum call time
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert lease_store.timeout == MIN_CALL_SECONDS
    second.__exit__(None, None, None)
    assert lease_store.timeout == 10.0
