"""`outbox relay --follow` as a real process through Firestore outages: the emulator frozen
(SIGSTOP on its process group) and the emulator unreachable (a local TCP proxy in front of
it stops accepting: connection refused, while the test still commits straight to the
emulator). The follower must idle, print nothing but JSON, and deliver what was committed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator, free_port, reset_emulator
from tests.conftest import PROJECT
from tests.e2e.relay.test_relay_processes import OUTBOX
from tests.support.helpers import add_orders, outbox, relay_environment

OUTAGE_SECONDS = 6.0
# A promise of idling, not a speed target: a busy loop shows as ~100% of a core.
IDLE_SHARE = 0.3


@pytest.fixture(scope="module")
def emulator() -> Iterator[FirestoreEmulator]:
    """An emulator of this module's own: freezing it must not stall other tests."""
    with FirestoreEmulator() as own:
        yield own


@pytest.fixture
def own(emulator: FirestoreEmulator) -> tuple[Settings, firestore.Client]:
    reset_emulator(emulator.host_port, PROJECT)
    settings = Settings(project_id=PROJECT, emulator_host=emulator.host_port)
    return settings, get_db_client(settings)


class Proxy:
    """Forwards TCP connections on its own port to `target`; `cut()` drops every
    connection and refuses new ones, `restore()` listens on the same port again."""

    def __init__(self, target: str) -> None:
        host, port = target.rsplit(":", 1)
        self._target = (host, int(port))
        self._port = free_port()
        self.host_port = f"127.0.0.1:{self._port}"
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def restore(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self._port))
        listener.listen()
        with self._lock:
            self._sockets.append(listener)
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes accept() and recv() at once
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            upstream = socket.create_connection(self._target)
            with self._lock:
                if listener not in self._sockets:  # cut meanwhile
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(source, sink), daemon=True).start()

    def __enter__(self) -> Proxy:
        self.restore()
        return self

    def __exit__(self, *_: object) -> None:
        self.cut()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    for sock in (source, sink):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process `pid` (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_share(pid: int, seconds: float) -> float:
    """The share of one core process `pid` used over the next `seconds`."""
    used, started = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - used) / (time.monotonic() - started)


class Follower:
    """`outbox relay --follow` at LOG_LEVEL=INFO, its stderr read line by line as it comes."""

    def __init__(self, variables: dict[str, str], cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("FIRESTORE_", "RELAY_"))}
        env.update(variables, LOG_LEVEL="INFO")
        command = [OUTBOX, "relay", "--follow", "--progress-every", "0.2s"]
        self.process = subprocess.Popen(
            command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)

    def wait_for_event(self, event: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not any(f'"event":"{event}"' in line for line in self.lines):
            assert time.monotonic() < deadline, f"no {event} in {self.lines[-5:]}"
            time.sleep(0.05)

    def wait_until_counted(self, processed: int, timeout: float = 60) -> None:
        """Until a `relay.follow_progress` line counts `processed` events: the follower has
        heard its settles land. (Seeing them `PROCESSED` in Firestore is not enough: the
        commit's answer may still be on its way when the emulator is frozen or cut off, and
        the settle is then the outage's, not counted `processed`: CI saw `processed` 2 of
        3 with `errors` 1, all 3 `PROCESSED`.)"""
        deadline = time.monotonic() + timeout
        while not any(
            '"relay.follow_progress"' in line and json.loads(line)["processed"] >= processed
            for line in list(self.lines)
        ):
            assert time.monotonic() < deadline, f"not {processed} counted: {self.lines[-3:]}"
            time.sleep(0.05)

    def stop(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """SIGTERM; the summary and every line printed, each parsed as JSON."""
        self.process.send_signal(signal.SIGTERM)
        stdout, _ = self.process.communicate(timeout=60)
        self._reader.join(timeout=10)
        assert self.process.returncode == 0, "".join(self.lines[-20:])
        lines = [line for line in [*stdout.splitlines(), *self.lines] if line.strip()]
        not_json = [line for line in lines if not _is_json_object(line)]
        assert not not_json, not_json[:5]
        return json.loads(stdout), [json.loads(line) for line in self.lines if line.strip()]


def wait_until_processed(db: firestore.Client, settings: Settings, count: int) -> None:
    deadline = time.monotonic() + 60
    while sum(e["status"] == "PROCESSED" for e in outbox(db, settings).values()) < count:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def test_follow_mode_idles_while_firestore_is_unreachable_then_delivers_what_was_committed(
    own: tuple[Settings, firestore.Client], tmp_path: Path
) -> None:
    settings, db = own
    with Receiver() as receiver, Proxy(settings.emulator_host or "") as proxy:
        # The listener's health watch is follow mode's with per-event leases.
        variables = relay_environment(
            settings, receiver.url, FIRESTORE_EMULATOR_HOST=proxy.host_port, RELAY_LEASES="event"
        )
        follower = Follower(variables, tmp_path)
        try:
            [first] = add_orders(db, settings, 1)
            assert [r.event_id for r in receiver.wait_for(1, timeout=30)] == [first]
            follower.wait_until_counted(1)  # its settle is not part of the outage
            proxy.cut()
            during = set(add_orders(db, settings, 3)) - {first}  # straight to the emulator
            share = cpu_share(follower.process.pid, OUTAGE_SECONDS)
            print(f"follower CPU while Firestore was unreachable: {share:.1%} of a core")
            proxy.restore()
            delivered = receiver.wait_for(4, timeout=90)
            wait_until_processed(db, settings, 4)
            follower.wait_for_event("relay.listener_resubscribed")
            follower.wait_until_counted(4)
        finally:
            summary, logged = follower.stop()
    assert share < IDLE_SHARE
    assert {r.event_id for r in delivered} == {first, *during}
    assert summary["listenerDown"] >= 1 and summary["resubscribed"] >= 1
    assert summary["processed"] == 4, summary
    assert any(entry.get("event") == "relay.listener_down" for entry in logged)
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}


def test_follow_mode_idles_through_a_frozen_emulator_and_delivers_after_it_thaws(
    emulator: FirestoreEmulator, own: tuple[Settings, firestore.Client], tmp_path: Path
) -> None:
    settings, db = own
    with Receiver() as receiver:
        follower = Follower(
            relay_environment(settings, receiver.url, RELAY_LEASES="event"), tmp_path
        )
        try:
            [first] = add_orders(db, settings, 1)
            assert [r.event_id for r in receiver.wait_for(1, timeout=30)] == [first]
            follower.wait_until_counted(1)  # its settle is not part of the freeze
            emulator.pause()
            try:
                share = cpu_share(follower.process.pid, OUTAGE_SECONDS)
            finally:
                emulator.resume()
            print(f"follower CPU while the emulator was frozen: {share:.1%} of a core")
            after = set(add_orders(db, settings, 2)) - {first}
            delivered = receiver.wait_for(3, timeout=90)
            wait_until_processed(db, settings, 3)
            follower.wait_until_counted(3)
        finally:
            summary, _ = follower.stop()
    assert share < IDLE_SHARE
    assert {r.event_id for r in delivered} == {first, *after}
    assert summary["processed"] == 3, summary
    assert {e["status"] for e in outbox(db, settings).values()} == {"PROCESSED"}
