"""A switch of `RELAY_LEASES` during a drain (a rolling deploy, a rollback): a relay of the
other mode waits, says so, and delivers nothing twice; once the first mode's runs are over
it drains."""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import make_relay, outbox
from tests.support.ordering import add_steps

# Deliveries are held for a while here: attempts and leases long enough for that.
SLOW = {"http_timeout_seconds": 10.0, "lock_timeout_seconds": 40.0, "batch_size": 20}
AGGREGATES = [f"agg-{n}" for n in range(6)]


class Gate:
    """Holds every delivery until `open` is set (at most 30 s)."""

    def __init__(self) -> None:
        self.opened = threading.Event()

    def __call__(self, _: Received) -> ReceiverAnswer:
        self.opened.wait(30)
        return ReceiverAnswer(200)


@pytest.fixture
def held() -> Iterator[tuple[Receiver, Gate]]:
    gate = Gate()
    with Receiver(gate) as receiver:
        yield receiver, gate
    gate.opened.set()


@pytest.mark.parametrize(("first", "second"), [("partition", "event"), ("event", "partition")])
def test_a_relay_of_the_other_lease_mode_waits_while_the_first_drains(
    db: firestore.Client,
    settings: Settings,
    receiver: Receiver,
    held: tuple[Receiver, Gate],
    first: str,
    second: str,
) -> None:
    ids = add_steps(db, settings, AGGREGATES * 10)  # 60 events, 10 per aggregate, in order
    slow, gate = held
    draining = make_relay(db, settings, slow.url, leases=first, **SLOW)
    summaries: list[dict[str, Any]] = []
    run = threading.Thread(target=lambda: summaries.append(draining.run()))
    run.start()
    try:
        assert slow.wait_for(1, timeout=30)  # the first relay is delivering (and held there)
        other = make_relay(db, settings, receiver.url, leases=second, **SLOW)
        waited = other.run()
    finally:
        gate.opened.set()
        run.join()

    assert waited["stoppedBy"] == "mode", waited
    assert (waited["waitingFor"], waited["modeWaits"], waited["processed"]) == (first, 1, 0)
    assert receiver.received == []  # nothing delivered beside the first relay
    assert summaries[0]["processed"] == 60, summaries
    assert sorted(r.event_id for r in slow.received) == sorted(ids)  # each once
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
    if first == "partition":  # (per-event leases keep no order)
        seen: dict[str, list[int]] = defaultdict(list)
        for request in slow.received:
            seen[request.json()["aggregate"]].append(request.json()["seq"])
        assert all(seen[a] == list(range(10)) for a in AGGREGATES), seen

    # The first mode's run is over and left no lease; its relay, warm, keeps its record (its
    # next run needs no call for it): the other mode waits until it lapses or is closed.
    ids = add_steps(db, settings, AGGREGATES)
    still = make_relay(db, settings, receiver.url, leases=second, **SLOW).run()
    assert (still["stoppedBy"], still["waitingFor"], still["processed"]) == ("mode", first, 0)
    draining.close()  # its record deleted: the other mode drains now
    after = make_relay(db, settings, receiver.url, leases=second, **SLOW).run()
    assert (after["stoppedBy"], after["processed"]) == ("drained", 6), after
    assert Counter(r.event_id for r in receiver.received) == Counter(ids)
