"""A budget that cannot fit one attempt, on the real emulator (a configured one is refused:
`tests/unit/relay/test_relay_variables.py`): reported (never `ok`) when an invocation's own
timeout leaves too little, and a run whose budget ran out before it published anything says
so.

The run that publishes nothing is forced, not hoped for: its only partition's first page
query is held until the call's own deadline (`FaultInjector`'s stall), which leaves the run
less than one attempt."""

from __future__ import annotations

import grpc
import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.function_compute import RelayFunction
from tests.support.faults import faulty_client, page_of
from tests.support.fc_invocation import (
    TIMER_EVENT,
    clean_environment,  # noqa: F401  (the `environment` fixture)
    fc_context,
    use,
)
from tests.support.helpers import add_orders, make_relay, outbox, relay_environment


@pytest.mark.usefixtures("environment")
def test_a_function_timeout_that_leaves_no_room_for_an_attempt_fails_fast_and_not_ok(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The case: a 20 s function with the default timeouts (budget 9 s, an attempt
    # up to 15.5 s) reported `ok, stoppedBy: budget, processed: 0` on every run.
    events = add_orders(db, settings, 3)
    use(
        monkeypatch,
        relay_environment(
            settings,
            receiver.url,
            RELAY_HTTP_TIMEOUT_SECONDS="10",
            RELAY_FIRESTORE_TIMEOUT_SECONDS="10",
            RELAY_TIME_BUDGET_SECONDS="50",
            RELAY_LOCK_TIMEOUT_SECONDS="300",
        ),
    )
    summary = RelayFunction().handler(TIMER_EVENT, fc_context("short", timeout=20))

    assert summary["status"] == "error" and summary["stoppedBy"] == "budgetTooShort", summary
    assert summary["error"].startswith(
        "the function's timeout (20 s) less RELAY_FIRESTORE_TIMEOUT_SECONDS (10 s) and 1 s "
        "leaves 9 s, less than one attempt needs (15.5 s: RELAY_HTTP_TIMEOUT_SECONDS"
    ), summary["error"]
    assert summary["processed"] == 0 and receiver.received == []
    assert {outbox(db, settings)[e]["status"] for e in events} == {"PENDING"}
    # Nothing was tried: no partition lease, no lease-mode record.
    assert not db.collection("outbox_partitions").get()
    assert not db.collection("outbox_partitions_mode").get()


def test_a_run_whose_budget_ran_out_before_it_published_anything_is_not_ok(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    [event] = add_orders(db, settings, 1)
    partition = outbox(db, settings)[event]["partition"]
    client, faults = faulty_client(settings)
    faults.fail(
        "RunQuery", grpc.StatusCode.DEADLINE_EXCEEDED, times=1, when=page_of(partition), stall=True
    )
    # An attempt needs 1.5 s (0.5 + 0.5 + 0.5 to settle); the stalled first page takes 1 s of
    # the 2 s budget: less than an attempt is left when it comes back.
    relay = make_relay(
        client, settings, receiver.url, time_budget_seconds=2.0, firestore_timeout_seconds=1.0
    )
    summary = relay.run().to_json()

    assert faults.injected == 1
    assert summary["status"] == "error" and summary["stoppedBy"] == "budget", summary
    assert summary["error"] == "the time budget ran out before anything was published"
    assert summary["leased"] == 0 and receiver.received == []
    assert outbox(db, settings)[event]["status"] == "PENDING"
