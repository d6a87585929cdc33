"""The fast path: a commit nudges the relay, which delivers without any timer invocation.

On the emulator, through a local server playing FC 3.0's async InvokeFunction (it checks the
signature) that runs the relay handler in a new process per invocation, as Function Compute
runs an instance; and through the `http` and `process` targets."""

from __future__ import annotations

import pytest
from google.cloud import firestore

from app.services import create_new_order
from app.uow import FirestoreUnitOfWork
from firestore_outbox.config.shortcuts import nudger_for
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.nudge import Nudger
from firestore_outbox.nudge.message import NUDGE_TYPE
from tests.support.fc3_relay import RelayFunction
from tests.support.helpers import outbox, relay_environment


def order(db: firestore.Client, settings: Settings, nudger: Nudger | None, n: int = 0) -> None:
    with FirestoreUnitOfWork(db, settings, nudger=nudger or False) as uow:
        create_new_order(f"customer-{n}", [{"productId": "sku-1", "quantity": 1}], uow)


def test_an_fc3_nudge_delivers_without_any_timer_invocation(
    db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    relay_env = relay_environment(settings, receiver.url, OUTBOX_NUDGE="fc3")
    function = RelayFunction(relay_env)
    with Receiver(function) as fc:
        producer_env = {**relay_env, **function.caller_environment(fc.url)}
        nudger = nudger_for(db, settings, producer_env)
        assert nudger is not None
        order(db, settings, nudger)
        assert nudger.wait_idle(30)
        function.wait()
        delivered = receiver.wait_for(1, timeout=30)

    assert function.failures == []
    assert nudger.counts["sent"] == 1 and nudger.counts["failed"] == 0
    [invocation] = function.invocations
    event = invocation.json()
    assert event["type"] == NUDGE_TYPE
    (partition,) = event["data"]["partitions"]
    [summary] = function.summaries
    assert summary["status"] == "ok" and summary["processed"] == 1, summary
    assert summary["nudged"] == [partition]
    [event_id] = outbox(db, settings)
    assert [r.event_id for r in delivered] == [event_id]
    assert outbox(db, settings)[event_id]["status"] == "PROCESSED"
    assert outbox(db, settings)[event_id]["partition"] == partition


def outbox_partition(db: firestore.Client, settings: Settings) -> int:
    [event] = outbox(db, settings).values()
    return int(event["partition"])


@pytest.mark.parametrize("target", ["http", "process"])
def test_http_and_in_process_nudges_deliver(
    target: str, db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    env = relay_environment(
        settings, receiver.url, OUTBOX_NUDGE=target, OUTBOX_NUDGE_SECRET="nudge-secret-0123456789"
    )
    function = RelayFunction(env)
    with Receiver(function.http_trigger) as relay_url:
        if target == "http":
            env["OUTBOX_NUDGE_URL"] = relay_url.url
        nudger = nudger_for(db, settings, env)
        assert nudger is not None
        order(db, settings, nudger)
        assert nudger.wait_idle(30)
        function.wait()
        receiver.wait_for(1, timeout=30)
    assert nudger.counts["sent"] == 1
    assert [e["status"] for e in outbox(db, settings).values()] == ["PROCESSED"]
    if target == "http":
        assert function.failures == []
        # the HTTP trigger's answer (200): the nudged partition drained, without a timer run
        assert [s["nudged"] for s in function.summaries] == [[outbox_partition(db, settings)]]
        assert function.summaries[0]["processed"] == 1
    else:
        assert function.summaries == []  # drained in this process
