"""Fan-out: the relay handler facing a large backlog invokes the relay function again,
asynchronously, through a local server playing Function Compute's invoke API (it checks each
request's signature with Function Compute's documented recipe, then runs the handler as
Function Compute would); each invocation drains partitions the others do not hold."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay.fan_out import FAN_OUT_TYPE
from function_compute.relay_handler import handler
from tests.integration.publishers.test_fc_publisher import SECRET, expected_signature
from tests.support.fc3_server import Fc3Endpoint
from tests.support.fc_invocation import TIMER_EVENT, clean_environment, fc_context, use
from tests.support.helpers import add_orders, outbox, relay_environment
from tests.support.overlap import HeldUntilOverlap

__all__ = ["clean_environment"]  # the `environment` fixture, imported for its name


class FunctionCompute:
    """Plays Function Compute's asynchronous invoke API, FC 3.0's (`Fc3Endpoint`, which checks
    the V3 signature with its own code) or FC 2.0's (checked by `expected_signature`); answers
    an accepted invocation 202 and runs the handler with its event."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.fc3 = Fc3Endpoint(keys={"AKID": SECRET}, functions={"relay"})
        self.invocations: list[Received] = []
        self.summaries: list[dict[str, Any]] = []
        self.threads: list[threading.Thread] = []
        self.refused = 0

    def __call__(self, request: Received) -> ReceiverAnswer:
        if self.api == "3.0":
            answer = self.fc3(request)
        elif request.headers.get("authorization") != expected_signature(request):
            answer = ReceiverAnswer(403)
        else:
            answer = ReceiverAnswer(202)
        if answer.status != 202:
            self.refused += 1
            return answer
        self.invocations.append(request)
        context = fc_context(f"child-{len(self.invocations)}")
        run = threading.Thread(target=lambda: self.summaries.append(handler(request.body, context)))
        self.threads.append(run)
        run.start()
        return answer


# FC 3.0's API for a function of its own (what s.yaml deploys), FC 2.0's for one in a service.
APIS = {"3.0": {}, "2.0": {"RELAY_FAN_OUT_SERVICE": "outbox"}}
PATHS = {
    "3.0": "/2023-03-30/functions/relay/invocations",
    "2.0": "/2016-08-15/services/outbox/functions/relay/invocations",
}


@pytest.mark.parametrize("api", APIS)
def test_a_large_backlog_starts_more_invocations_that_drain_other_partitions(
    api: str,
    db: firestore.Client,
    settings: Settings,
    environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    event_ids = add_orders(db, settings, 160)
    fc, deliveries = FunctionCompute(api), HeldUntilOverlap(concurrency=2, pace=0.02)
    with Receiver(deliveries) as downstream, Receiver(fc) as function_compute:
        use(
            monkeypatch,
            relay_environment(
                settings,
                downstream.url,
                RELAY_CONCURRENCY="2",
                # A page smaller than a partition's events, as in a backlog worth fanning
                # out: an invocation claims more partitions only as it runs out of events
                # to send (with 250 it would hold all 16 after its first few reads).
                RELAY_BATCH_SIZE="10",
                RELAY_FAN_OUT_MAX="3",
                RELAY_FAN_OUT_EVENTS="40",
                RELAY_FAN_OUT_ENDPOINT=function_compute.url.removesuffix("/events"),
                RELAY_FAN_OUT_FUNCTION="relay",
                ALIBABA_CLOUD_ACCESS_KEY_ID="AKID",
                ALIBABA_CLOUD_ACCESS_KEY_SECRET=SECRET,
                **APIS[api],
            ),
        )
        first = handler(TIMER_EVENT, fc_context("timer"))
        for thread in fc.threads:
            thread.join(timeout=60)
        # Under load an invocation may hand events back unsent (its budget, or a downstream
        # answer past the attempt's deadline read as the channel's): the next timer
        # invocations deliver them, as Function Compute's timer would.
        children = list(fc.summaries)
        later = []
        for n in range(5):
            if {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}:
                break
            later.append(handler(TIMER_EVENT, fc_context(f"timer-{n}")))
            for thread in fc.threads:
                thread.join(timeout=60)

    assert first["status"] == "ok" and first["fannedOut"] == 3, first
    assert fc.refused == 0 and len(children) == 3
    for request in fc.invocations[:3]:
        assert request.path == PATHS[api]
        assert request.headers["x-fc-invocation-type"] == "Async"
        assert request.json()["type"] == FAN_OUT_TYPE
    assert [s["fannedOut"] for s in children] == [0, 0, 0]  # they start no more
    assert sum(s["processed"] for s in [first, *fc.summaries, *later]) == 160  # each once
    assert sum(1 for s in children if s["processed"]) >= 1  # they did drain partitions
    assert deliveries.overlapped  # while the first invocation's deliveries were outstanding
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
    assert sorted(outbox(db, settings)) == event_ids
