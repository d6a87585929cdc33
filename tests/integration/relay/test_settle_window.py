"""How much a relay has delivered and not settled is bounded by `RELAY_BATCH_SIZE`, with
partition leases as with event leases: a settle write that does not come back holds
publishing once the window is full. That window is what a relay killed between its 2xx's and
their settle delivers again (the order drill counts it per kill)."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay import Relay
from tests.support.helpers import add_orders, fast_config, outbox

BATCH = 10


# 60 orders: more to read and claim while the window is full; 15: everything read and
# claimed, the rest of it waiting only for room (the drain must not end there).
@pytest.mark.parametrize(
    ("leases", "orders"),
    [("partition", 60), ("partition", 15), ("event", 60)],
    ids=["partition-backlog", "partition-all-read", "event"],
)
def test_a_settle_write_that_does_not_return_holds_publishing_at_one_batch(
    leases: str,
    orders: int,
    db: firestore.Client,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RELAY_PARTITIONS", "2")  # the writers agree with the relay
    add_orders(db, settings, orders)  # one aggregate each: no order holds any of them back
    held, release = threading.Event(), threading.Event()
    seen_while_held: list[int] = []
    lock = threading.Lock()

    with Receiver() as receiver:

        def count(_: Received) -> ReceiverAnswer:
            with lock:
                if len(receiver.received) + 1 == BATCH:
                    # The window is full once this one is answered: give the relay half a
                    # second to send more than it may (it would send all it read), then let
                    # the held settle return.
                    threading.Timer(0.5, release.set).start()
            return ReceiverAnswer(200)

        receiver.respond = count
        config = fast_config(
            receiver.url,
            leases=leases,
            batch_size=BATCH,
            concurrency=4,
            partitions=2,
            partitions_per_claim=2,
            time_budget_seconds=60.0,
            lock_timeout_seconds=60.0,
        )
        relay = Relay(db, settings, config)
        write = relay.store.write

        def held_settle(*args: Any, **kwargs: Any) -> Any:
            if threading.current_thread().name == "relay-settle" and not held.is_set():
                held.set()  # the first settle write: it does not come back until released
                assert release.wait(30), "the window never filled"
                seen_while_held.append(len(receiver.received))
            return write(*args, **kwargs)

        relay.store.write = held_settle  # type: ignore[method-assign]
        summary = relay.run()
        events = outbox(db, settings)

    assert held.is_set(), summary
    # Everything delivered while the settle was held is delivered and unsettled: at most
    # one batch (before, with partition leases: every event read, all 60 here).
    assert seen_while_held == [BATCH], (seen_while_held, summary)
    assert {e["status"] for e in events.values()} == {"PROCESSED"}, summary
    assert len(receiver.received) == orders, summary  # nothing sent twice, nothing left
