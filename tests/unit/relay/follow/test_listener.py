"""`Listener` against a hand-written store and watch: health, backoff, staleness, counts."""

from __future__ import annotations

import datetime
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from firestore_outbox.relay.follow import listener as listener_module
from firestore_outbox.relay.follow.listener import Listener

NOW = datetime.datetime(2026, 11, 22, 8, 0, tzinfo=datetime.timezone.utc)


class FakeWatch:
    def __init__(self) -> None:
        self.is_active = True
        self._rpc = None  # as after close: nothing for the internals to pace

    def unsubscribe(self) -> None:
        self.is_active = False


@dataclass
class FakeStore:
    watches: list[FakeWatch] = field(default_factory=list)
    callbacks: list[Callable[[list[Any]], None]] = field(default_factory=list)

    def watch_pending(
        self, limit: int, on_change: Callable[[list[Any]], None], *, newest: bool = False
    ) -> FakeWatch:
        self.watches.append(FakeWatch())
        self.callbacks.append(on_change)
        return self.watches[-1]


@dataclass(frozen=True)
class Doc:
    id: str
    update_time: datetime.datetime
    at: datetime.datetime

    def get(self, name: str) -> Any:
        return self.at if name == "nextAttemptAt" else None


def make(store: FakeStore, tally: Counter[str], size: int = 3) -> Listener:
    class Half(random.Random):
        def random(self) -> float:
            return 1.0  # no jitter: the delays below are exact

    return Listener(store, size, lambda: None, first_snapshot_seconds=5.0, tally=tally, rng=Half())  # type: ignore[arg-type]


def test_a_stream_that_ended_takes_the_listener_down_with_doubling_capped_backoff() -> None:
    store, tally = FakeStore(), Counter[str]()
    listener = make(store, tally)
    listener.subscribe()
    store.callbacks[-1]([])
    assert listener.up
    delays = []
    for _ in range(10):
        store.watches[-1].is_active = False
        listener.failed(RuntimeError("stream ended"))  # as the Watch's error thread reports
        listener.check()
        assert not listener.subscribed and not listener.up and listener.window() == []
        delays.append(round(listener.retry_at - listener_module.time.monotonic()))
        listener.subscribe()
    assert delays[:4] == [0, 1, 2, 4] and max(delays) == listener_module.RESUBSCRIBE_CAP_SECONDS
    assert tally["listenerDown"] == 1  # one outage, however many attempts
    store.callbacks[-1]([])
    assert listener.up and tally["resubscribed"] == 1


def test_a_due_event_missing_from_the_window_well_after_its_write_means_stale() -> None:
    store, tally = FakeStore(), Counter[str]()
    listener = make(store, tally)
    listener.subscribe()
    shown = Doc("a", NOW - datetime.timedelta(minutes=1), NOW)
    store.callbacks[-1]([shown])
    old = Doc("b", NOW - datetime.timedelta(seconds=30), NOW)
    fresh = Doc("c", NOW - datetime.timedelta(seconds=1), NOW)
    assert not listener.stale([shown, fresh], NOW)  # a commit still on its way
    assert listener.stale([shown, old], NOW)
    # A full window ends before later events: those are not missing from it.
    full = [Doc(str(n), NOW, NOW - datetime.timedelta(seconds=10 - n)) for n in range(3)]
    store.callbacks[-1](full)
    later = Doc("d", NOW - datetime.timedelta(minutes=1), NOW)
    assert not listener.stale([later], NOW)


def test_a_poll_failing_while_the_listener_is_down_backs_off_without_a_second_report(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, tally = FakeStore(), Counter[str]()
    listener = make(store, tally)
    listener.subscribe()
    store.callbacks[-1]([])
    store.watches[-1].is_active = False
    listener.failed(RuntimeError("stream ended"))
    listener.check()
    first_delay = listener.retry_at - listener_module.time.monotonic()
    # The follower's poll fails before the resubscription (the emulator answers a call made
    # just after a listen stream was cancelled with 499 "call already cancelled").
    listener.down("Firestore error", RuntimeError("499 call already cancelled"))
    reports = [r for r in caplog.records if "listener down (" in r.getMessage()]
    assert [r.getMessage().split(")")[0] for r in reports] == ["listener down (stream ended"]
    assert listener.retry_at - listener_module.time.monotonic() > first_delay  # backed off
    assert tally["listenerDown"] == 1
    # A subscription that goes down again is reported again.
    listener.subscribe()
    store.watches[-1].is_active = False
    listener.failed(RuntimeError("stream ended"))
    listener.check()
    assert len([r for r in caplog.records if "listener down (" in r.getMessage()]) == 2
