"""The `http` nudge target against a target that trickles its answer (a raw local server):
one deadline, the nudge's timeout, bounds the connect, the send and the whole answer, so
such a target no longer holds the sender, and the nudges after it still go out.

The trickle is forced and outlasts the deadline many times over: the target answers `202`
with a 1,000-byte body it sends one byte every 0.2 s (200 s in all); the test waits for the
requests to arrive, never for time to pass."""

from __future__ import annotations

from firestore_outbox.nudge.sender import Nudger
from firestore_outbox.nudge.targets import HttpNudge
from tests.support.wire_servers import RawServer, TricklingTarget


def test_a_trickling_target_holds_a_nudge_no_longer_than_its_timeout() -> None:
    target = TricklingTarget()
    with RawServer(target) as server:
        nudge = HttpNudge(server.url + "?token=s3cret", timeout=1.0)
        try:
            taken = nudge.send(frozenset({3}))
        finally:
            nudge.close()
            done_early = not target.finished.is_set()
            target.stop.set()
    assert taken is False  # no whole answer within the deadline: not taken
    assert done_early  # it returned while the target was still trickling
    assert len(target.arrived) == 1 and b'"partitions": [3]' in target.arrived[0]


def test_nudges_after_a_trickling_target_still_go_out() -> None:
    target = TricklingTarget()
    with RawServer(target) as server:
        nudger = Nudger(HttpNudge(server.url, timeout=1.0), interval_seconds=0)
        try:
            nudger.nudge({1})
            assert target.first.wait(60)  # being trickled its answer: the sender is held
            nudger.nudge({2})  # (asked for before, it would go in the same nudge)
            assert target.second.wait(60), "the second nudge never reached the target"
            assert nudger.wait_idle(60)
        finally:
            target.stop.set()
            nudger.close()
    assert not target.finished.is_set()
    assert nudger.counts["failed"] == 2 and nudger.counts["requested"] == 2, nudger.counts
