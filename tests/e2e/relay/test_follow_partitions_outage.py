"""`outbox relay --follow` with partition leases (the default since 0.3) as a real process
through a Firestore outage: the emulator frozen (SIGSTOP on its process group), then
unreachable (the local TCP proxy in front of it refuses connections while the test commits
straight to the emulator), then back. The follower must print nothing but JSON, idle its CPU,
and deliver everything committed, once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator, reset_emulator
from tests.conftest import PROJECT
from tests.e2e.relay.test_follow_outage import (
    IDLE_SHARE,
    OUTAGE_SECONDS,
    Follower,
    Proxy,
    cpu_seconds,
    wait_until_processed,
)
from tests.support.helpers import add_orders, outbox, relay_environment


def _wait(seconds: float) -> float:
    """Sleep `seconds`; how long it really took (the denominator of a CPU share)."""
    started = time.monotonic()
    time.sleep(seconds)
    return time.monotonic() - started


@pytest.fixture(scope="module")
def emulator() -> Iterator[FirestoreEmulator]:
    """An emulator of this module's own: freezing it must not stall other tests."""
    with FirestoreEmulator() as own:
        yield own


def test_partitioned_follow_mode_idles_through_a_frozen_then_unreachable_firestore(
    emulator: FirestoreEmulator, tmp_path: Path
) -> None:
    reset_emulator(emulator.host_port, PROJECT)
    settings = Settings(project_id=PROJECT, emulator_host=emulator.host_port)
    db: firestore.Client = get_db_client(settings)
    with Receiver() as receiver, Proxy(emulator.host_port) as proxy:
        variables = relay_environment(
            settings, receiver.url, FIRESTORE_EMULATOR_HOST=proxy.host_port
        )
        assert "RELAY_LEASES" not in variables  # the default: partition leases
        follower = Follower(variables, tmp_path)
        try:
            [first] = add_orders(db, settings, 1)
            assert [r.event_id for r in receiver.wait_for(1, timeout=30)] == [first]
            wait_until_processed(db, settings, 1)  # its settle is not part of the outage
            follower.wait_for_event("relay.follow_started")
            used = cpu_seconds(follower.process.pid)
            emulator.pause()
            try:
                frozen = _wait(OUTAGE_SECONDS)
                proxy.cut()  # now unreachable: connections refused
            finally:
                emulator.resume()  # never leave a stopped JVM behind
            during = set(add_orders(db, settings, 3)) - {first}  # straight to the emulator
            unreachable = _wait(OUTAGE_SECONDS)
            share = (cpu_seconds(follower.process.pid) - used) / (frozen + unreachable)
            print(f"partitioned follower CPU through the outage: {share:.1%} of a core")
            proxy.restore()
            delivered = receiver.wait_for(4, timeout=90)
            wait_until_processed(db, settings, 4)
            # The follower looks at its listener between runs; a run that spans the outage
            # (its reads retried within the budget) may end after the events are delivered:
            # wait for the look instead of stopping before it (CI under load stopped first).
            follower.wait_for_event("relay.listener_down")
        finally:
            summary, logged = follower.stop()
    assert sorted(r.event_id for r in delivered) == sorted({first, *during})
    assert summary["processed"] == 4, summary
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
    assert any(entry.get("event") == "relay.listener_down" for entry in logged), logged[-5:]
    assert share < IDLE_SHARE
