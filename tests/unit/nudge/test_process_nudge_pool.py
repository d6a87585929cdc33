"""`OUTBOX_NUDGE=process`'s drains (`firestore_outbox.nudge.process`), with a relay whose
runs block until the test lets each go: `send` returns at once; a partition not being drained
starts a drain beside those under way; one nudged while its own drain runs is drained again
right after it; with the pool full, what is wanted waits and goes in one drain. Before, `send`
ran the drain itself, on the nudger's one thread."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from firestore_outbox.nudge.process import ProcessNudge


@dataclass
class Summary:
    ok: bool = True


class HeldRelay:
    """Each `run` is recorded, then blocks until `let_go(partitions)`."""

    def __init__(self) -> None:
        self.runs: list[frozenset[int]] = []
        self.closed = False
        self._cond = threading.Condition()
        self._go: list[frozenset[int]] = []

    def run(self, *, partitions: frozenset[int], hand_off: object) -> Summary:
        with self._cond:
            self.runs.append(frozenset(partitions))
            self._cond.notify_all()
            assert self._cond.wait_for(lambda: partitions in self._go, 10)
            self._go.remove(partitions)
        return Summary()

    def let_go(self, partitions: set[int]) -> None:
        with self._cond:
            self._go.append(frozenset(partitions))
            self._cond.notify_all()

    def wait_runs(self, count: int) -> list[frozenset[int]]:
        with self._cond:
            assert self._cond.wait_for(lambda: len(self.runs) >= count, 10), self.runs
            return list(self.runs)

    def close(self) -> None:
        self.closed = True


def target(drains: int = 4) -> tuple[ProcessNudge, HeldRelay]:
    relay = HeldRelay()
    return ProcessNudge(relay, drains=drains), relay  # type: ignore[arg-type]


def test_a_drain_under_way_does_not_hold_back_another_partitions() -> None:
    nudge, relay = target()
    assert nudge.send(frozenset({1}))  # returns while its drain is held
    relay.wait_runs(1)
    assert nudge.send(frozenset({2}))
    assert relay.wait_runs(2) == [{1}, {2}]  # beside the first, not after it
    relay.let_go({2})
    relay.let_go({1})
    assert nudge.wait_idle(10)
    nudge.close()
    assert relay.closed


def test_a_partition_nudged_during_its_own_drain_is_drained_again_after_it() -> None:
    nudge, relay = target()
    nudge.send(frozenset({1}))
    relay.wait_runs(1)
    nudge.send(frozenset({1, 3}))  # 1: after its drain; 3: now
    nudge.send(frozenset({1}))  # coalesced with the one waiting
    assert relay.wait_runs(2) == [{1}, {3}]
    assert not nudge.wait_idle(0)  # a caller waiting for delivery waits for the drains
    relay.let_go({1})
    assert relay.wait_runs(3) == [{1}, {3}, {1}]  # one in flight per partition, one more
    relay.let_go({1})
    relay.let_go({3})
    assert nudge.wait_idle(10)
    nudge.close()
    assert relay.runs == [{1}, {3}, {1}]


def test_with_every_worker_busy_the_wanted_partitions_go_in_one_drain() -> None:
    nudge, relay = target(drains=2)
    nudge.send(frozenset({1}))
    nudge.send(frozenset({2}))
    relay.wait_runs(2)
    for n in (3, 4, 5):
        assert nudge.send(frozenset({n}))  # no worker free: they wait, and send returns
    relay.let_go({1})
    assert relay.wait_runs(3)[2] == {3, 4, 5}
    relay.let_go({3, 4, 5})
    relay.let_go({2})
    assert nudge.wait_idle(10)
    nudge.close()
    assert len(relay.runs) == 3


def test_close_waits_for_the_drains_under_way_then_closes_the_relay() -> None:
    nudge, relay = target()
    nudge.send(frozenset({1}))
    relay.wait_runs(1)
    closing = threading.Thread(target=nudge.close)
    closing.start()
    closing.join(0.05)
    assert closing.is_alive() and not relay.closed  # waiting for the drain
    relay.let_go({1})
    closing.join(10)
    assert relay.closed and not nudge.send(frozenset({2}))  # closed: nothing more starts
