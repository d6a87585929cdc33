"""A relay closes its publisher's connections when it is done: `Relay.close()` and `with`,
`outbox relay` (one run and `--follow`) when the command returns. A real local server counts
the connections the relay holds open; every relay the command builds is kept referenced, so
what closes them is the relay, not the garbage collector."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox import cli
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.relay import Relay
from tests.support.helpers import add_orders, make_relay, outbox, relay_environment
from tests.support.wire_servers import RawServer, answer, serve_forever


@pytest.fixture
def downstream() -> Iterator[RawServer]:
    """A keep-alive HTTP server answering 200 that counts its open connections."""
    with RawServer(serve_forever(lambda connection, _: connection.send(answer(200)))) as server:
        yield server


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[Relay]:
    """Every relay `outbox relay` builds, kept alive past the command's return."""
    relays: list[Relay] = []

    class Kept(Relay):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            relays.append(self)

    # The command builds its relay through the composition root (config.wiring), which takes
    # `Relay` from the relay's face when it builds one.
    monkeypatch.setattr("firestore_outbox.relay.Relay", Kept)
    return relays


@pytest.fixture
def command_environment(
    settings: Settings, downstream: RawServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Only the relay's variables, and a working directory without a `.env`."""
    monkeypatch.chdir(tmp_path)
    for name in list(os.environ):
        if name.startswith(("FIRESTORE_", "RELAY_", "DOWNSTREAM_", "OUTBOX_")):
            monkeypatch.delenv(name)
    for name, value in relay_environment(settings, downstream.url).items():
        monkeypatch.setenv(name, value)


def test_a_relay_left_by_with_closes_its_downstream_connections(
    db: firestore.Client, settings: Settings, downstream: RawServer
) -> None:
    add_orders(db, settings, 3)
    with make_relay(db, settings, downstream.url) as relay:
        assert relay.run()["processed"] == 3
        assert downstream.open_connections >= 1  # kept alive for the next run
    assert downstream.wait_for_open_connections(0) == 0
    assert relay is not None  # still referenced: the close was the relay's


def test_outbox_relay_closes_its_connections_when_it_returns(
    db: firestore.Client,
    settings: Settings,
    downstream: RawServer,
    command_environment: None,
    built: list[Relay],
) -> None:
    add_orders(db, settings, 2)
    assert cli.main(["relay", "--time-budget", "10"]) == 0
    assert len(built) == 1 and downstream.accepted >= 1
    assert downstream.wait_for_open_connections(0) == 0


def test_outbox_relay_follow_closes_its_connections_when_it_stops(
    db: firestore.Client,
    settings: Settings,
    downstream: RawServer,
    command_environment: None,
    built: list[Relay],
) -> None:
    [event_id] = add_orders(db, settings, 1)

    def stop_once_delivered() -> None:
        deadline = time.monotonic() + 30
        while outbox(db, settings)[event_id]["status"] != "PROCESSED":
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)  # as a service manager stops it

    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    stopper = threading.Thread(target=stop_once_delivered, daemon=True)
    try:
        stopper.start()
        assert cli.main(["relay", "--follow"]) == 0
    finally:
        stopper.join(timeout=40)
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert outbox(db, settings)[event_id]["status"] == "PROCESSED"
    assert len(built) == 1 and downstream.accepted >= 1
    assert downstream.wait_for_open_connections(0) == 0
