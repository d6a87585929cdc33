"""The sender's pace (`firestore_outbox.nudge.sender`): a token bucket. A commit after a quiet
spell is nudged at once; a burst beyond the bucket rides on one nudge after the refill; a
steady high rate is coalesced into a few nudges a second. Before, the sender slept an interval
after every nudge, so a commit that came during that sleep waited for it (at 10 commits/s,
nearly all of them).

Time is a fake the test moves: the sender's `sleep` blocks until the test has moved the clock
past its end, so nothing waits on the wall clock and every interleaving is the test's."""

from __future__ import annotations

import logging
import threading

import pytest

from firestore_outbox.nudge.complaints import Complaints
from firestore_outbox.nudge.sender import Nudger

INTERVAL = 0.1


class FakeTime:
    """`clock` and `sleep` for the sender; `advance` moves the clock (and ends sleeps)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []
        self.asleep_until: float | None = None
        self._cond = threading.Condition()

    def clock(self) -> float:
        with self._cond:
            return self.now

    def sleep(self, seconds: float) -> None:
        with self._cond:
            self.sleeps.append(round(seconds, 6))
            until = self.now + seconds - 1e-9
            self.asleep_until = until
            self._cond.notify_all()
            assert self._cond.wait_for(lambda: self.now >= until, 10)
            self.asleep_until = None

    def advance(self, seconds: float) -> None:
        with self._cond:
            self.now += seconds
            self._cond.notify_all()

    def settled(self, nudger: Nudger) -> None:
        """Wait until the sender has sent everything or sleeps for a token to come."""
        for _ in range(10_000):
            if nudger.wait_idle(0.001):
                return
            with self._cond:
                if self.asleep_until is not None and self.asleep_until > self.now:
                    return
        raise AssertionError("the sender neither finished nor slept")


class Recording:
    def __init__(self) -> None:
        self.sent: list[frozenset[int]] = []

    def send(self, partitions: frozenset[int]) -> bool:
        self.sent.append(partitions)
        return True

    def close(self) -> None:
        pass


def nudger(fake: FakeTime, target: Recording) -> Nudger:
    return Nudger(target, interval_seconds=INTERVAL, clock=fake.clock, sleep=fake.sleep)


def test_a_commit_after_a_quiet_spell_is_nudged_without_waiting() -> None:
    fake, target = FakeTime(), Recording()
    sender = nudger(fake, target)
    for n in range(5):  # 5 commits 1 s apart: each finds a token
        sender.nudge({n})
        fake.settled(sender)
        assert target.sent[-1] == {n}  # sent before any time passed
        fake.advance(1.0)
    sender.close()
    assert fake.sleeps == []  # the sender never waited, before or after a nudge
    assert sender.counts["nudges"] == sender.counts["sent"] == 5


def test_a_steady_ten_a_second_never_waits() -> None:
    fake, target = FakeTime(), Recording()
    sender = nudger(fake, target)
    for n in range(50):  # a commit every 0.1 s, some of them early by up to 0.05 s
        fake.advance(0.05 if n % 3 == 0 else 0.125)
        sender.nudge({n % 7})
        fake.settled(sender)
    sender.close()
    assert fake.sleeps == []
    assert sender.counts["nudges"] == 50 and sender.counts["coalesced"] == 0


def test_a_burst_beyond_the_bucket_rides_on_one_nudge_after_the_refill() -> None:
    fake, target = FakeTime(), Recording()
    sender = nudger(fake, target)
    for n in (1, 2):  # the bucket's two tokens
        sender.nudge({n})
        fake.settled(sender)
    sender.nudge({3})  # no token left: the sender waits for the next one
    fake.settled(sender)
    assert fake.sleeps == [INTERVAL] and len(target.sent) == 2
    for n in (4, 5, 3):  # queued while it waits
        sender.nudge({n})
    fake.advance(INTERVAL)
    assert sender.wait_idle(10)
    sender.close()
    assert target.sent == [{1}, {2}, {3, 4, 5}]
    counts = sender.counts
    assert (counts["requested"], counts["sent"], counts["nudges"], counts["coalesced"]) == (
        6,
        6,
        3,
        3,
    )


def test_a_steady_hundred_a_second_is_coalesced_into_a_few_nudges_a_second() -> None:
    fake, target = FakeTime(), Recording()
    sender = nudger(fake, target)
    for n in range(1000):  # 10 s at 100 commits/s
        fake.advance(0.01)
        sender.nudge({n % 14})
        fake.settled(sender)
    fake.advance(1.0)
    assert sender.wait_idle(10)
    sender.close()
    nudges = sender.counts["nudges"]
    # Stretched to 0.3 s under load: about 3.3 nudges a second, plus the first burst.
    assert 30 <= nudges <= 40, nudges
    assert sender.counts["sent"] == 1000 and sender.counts["coalesced"] == 1000 - nudges
    assert max(fake.sleeps) <= 3 * INTERVAL + 1e-6


def test_an_unpaced_target_is_never_waited_for() -> None:
    class Unpaced(Recording):
        paced = False

    fake, target = FakeTime(), Unpaced()
    sender = Nudger(target, interval_seconds=INTERVAL, clock=fake.clock, sleep=fake.sleep)
    for n in range(10):  # a burst, no time passing
        sender.nudge({n})
        fake.settled(sender)
    sender.close()
    assert fake.sleeps == [] and len(target.sent) == 10


def test_a_target_that_refuses_every_nudge_is_logged_once_a_minute_with_the_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Before, a warning per nudge: 10 lines a second from a producer at 10 commits/s.
    now = [0.0]
    complaints = Complaints(lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="firestore_outbox.nudge"):
        for step in range(600):  # 60 s of refusals, 10 a second
            now[0] = step / 10
            complaints.complain("refused", "nudge of %d partitions not taken", 1)
        assert [r.getMessage() for r in caplog.records] == ["nudge of 1 partitions not taken"]
        now[0] = 60.0
        complaints.complain("refused", "nudge of %d partitions not taken", 2)
        complaints.complain("failed", "nudge failed: %s", "Timeout")  # a kind of its own
    assert [r.getMessage() for r in caplog.records][1:] == [
        "nudge of 2 partitions not taken (and 599 more not logged in the last 60 s)",
        "nudge failed: Timeout",
    ]
