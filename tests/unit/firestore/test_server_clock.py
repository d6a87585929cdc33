"""`ServerClock` bounds Firestore's time from its answers, whatever the local wall clock says."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from firestore_outbox.firestore.clock import ClockNotSet, ServerClock

SERVER = dt.datetime(2030, 1, 1, tzinfo=dt.timezone.utc)  # far from this machine's clock


def test_the_clock_is_firestores_bounded_by_the_round_trip() -> None:
    clock = ServerClock()
    with pytest.raises(ClockNotSet):
        clock.earliest()
    sent = time.monotonic() - 0.2  # a request that took 0.2 s
    clock.observe(SERVER, sent)
    earliest, latest = clock.earliest(), clock.latest()
    assert SERVER <= earliest <= latest <= SERVER + dt.timedelta(seconds=0.3)
    assert latest - earliest >= dt.timedelta(seconds=0.19)  # apart by the round trip


def test_a_better_answer_tightens_the_bounds_and_a_worse_one_changes_nothing() -> None:
    clock = ServerClock()
    clock.observe(SERVER, time.monotonic() - 1.0)
    loose = clock.latest() - clock.earliest()
    clock.observe(SERVER - dt.timedelta(seconds=5), time.monotonic())  # older news
    assert clock.latest() - clock.earliest() <= loose
    clock.observe(SERVER + dt.timedelta(seconds=0.5), time.monotonic() - 0.01)
    assert clock.earliest() >= SERVER + dt.timedelta(seconds=0.5)
    assert clock.latest() - clock.earliest() <= dt.timedelta(seconds=0.05)


def test_a_listener_time_alone_gives_the_earliest_for_both() -> None:
    clock = ServerClock()
    clock.observe(SERVER)  # no request of ours: no upper bound
    assert SERVER <= clock.earliest() <= clock.latest()
