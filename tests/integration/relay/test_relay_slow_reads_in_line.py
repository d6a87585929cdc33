"""The reads a run makes in line, each forced slow on the real emulator, are sent again within
the budget (`firestore_outbox.relay.reads`) like the drain's page reads: a timer run's survey,
the held-events read, the re-check after a release, the per-event due query and a backlog
run's counts beside its drain (what ended a 20,000-event run on the emulator). A read that
fails after the budget stops the run as out of budget (`stoppedBy: budget`), not as an error.

The slow read is forced, not hoped for: a `FaultInjector` on the relay's own channel holds
exactly the n-th read of one kind until the call's own deadline
(`RELAY_FIRESTORE_TIMEOUT_SECONDS`) passes, then fails it `DEADLINE_EXCEEDED`, as a query
Firestore never answers does. Every other call goes to the emulator untouched."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import grpc
import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from tests.support.faults import (
    count_read,
    due_read,
    faulty_client,
    held_read,
    nth,
    recheck_read,
    survey_read,
)
from tests.support.helpers import add_orders, make_relay, outbox

TIMEOUT = 1.0  # RELAY_FIRESTORE_TIMEOUT_SECONDS: the stalled read takes this long
READS: dict[str, tuple[Callable[[Any], bool], dict[str, Any]]] = {
    "survey": (survey_read, {}),
    "held": (held_read, {}),
    "recheck": (recheck_read, {"recheck_released": True}),
    "due": (due_read, {"leases": "event"}),
}


@pytest.mark.parametrize("kind", sorted(READS))
def test_a_read_that_times_out_once_is_sent_again_and_the_run_delivers_everything(
    kind: str, db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 12)
    match, overrides = READS[kind]
    client, faults = faulty_client(settings)
    faults.fail("RunQuery", grpc.StatusCode.DEADLINE_EXCEEDED, when=nth(1, match), stall=True)
    relay = make_relay(
        client, settings, receiver.url, firestore_timeout_seconds=TIMEOUT, **overrides
    )
    summary = relay.run().to_json()

    assert faults.injected == 1, f"no {kind} read was made"
    assert summary["status"] == "ok", summary
    assert summary["readRetries"] == 1, summary
    assert summary["processed"] == 12, summary
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}


def test_a_backlog_run_s_count_beside_the_drain_that_times_out_is_sent_again(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 40)  # more than the survey reads (32): a backlog
    client, faults = faulty_client(settings)
    faults.fail(
        "RunAggregationQuery",
        grpc.StatusCode.DEADLINE_EXCEEDED,
        when=nth(1, count_read),
        stall=True,
    )
    relay = make_relay(client, settings, receiver.url, firestore_timeout_seconds=TIMEOUT)
    summary = relay.run().to_json()

    assert faults.injected == 1, "no count was made beside the drain"
    assert summary["status"] == "ok", summary
    assert summary["readRetries"] == 1, summary
    assert summary["processed"] == 40, summary


def test_a_read_that_fails_after_the_budget_stops_the_run_as_out_of_budget(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    add_orders(db, settings, 12)
    client, faults = faulty_client(settings)
    # The second due query: the first lot of 4 is delivered, then this read stalls for
    # 3 s, past the 2 s budget.
    faults.fail("RunQuery", grpc.StatusCode.DEADLINE_EXCEEDED, when=nth(2, due_read), stall=True)
    relay = make_relay(
        client,
        settings,
        receiver.url,
        leases="event",
        batch_size=4,
        time_budget_seconds=2.0,
        firestore_timeout_seconds=3.0,
        lock_timeout_seconds=6.0,
    )
    summary = relay.run().to_json()

    assert faults.injected == 1
    assert (summary["status"], summary["stoppedBy"]) == ("ok", "budget"), summary
    assert summary.get("error") is None, summary
    assert summary["processed"] == 4, summary
    assert summary["readRetries"] == 0, summary
