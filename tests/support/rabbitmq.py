"""A real RabbitMQ broker for the tests: Debian's `rabbitmq-server`, run as a node of its own
on free ports in a temporary directory, stopped by its process group (and by a watchdog
when the test process dies without stopping it: firestore_outbox/testing/watchdog.py).

    from tests.support.rabbitmq import Broker  # the `rabbitmq` fixture:
    tests/integration/conftest.py

Tests skip with a clear message when rabbitmq-server is not installed (`.ci/run` installs it).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pika
import pytest

from firestore_outbox.testing.emulator import free_port
from firestore_outbox.testing.watchdog import Watchdog

# Debian's wrapper in /usr/sbin switches to the rabbitmq user; the script behind it runs the
# node as whoever calls it, which a node in a temporary directory needs.
CANDIDATES = ("/usr/lib/rabbitmq/bin/rabbitmq-server", "rabbitmq-server")
START_SECONDS = 90.0
STOP_SECONDS = 30.0


def server_command() -> str | None:
    for candidate in CANDIDATES:
        found = shutil.which(candidate)
        if found:
            return found
    return None


class Broker:
    """One RabbitMQ node; `url` reaches it as the guest user over loopback."""

    def __init__(self, command: str, directory: Path) -> None:
        self.command = command
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"amqp://guest:guest@127.0.0.1:{self.port}/%2F"
        self._process: subprocess.Popen[bytes] | None = None
        self._watchdog: Watchdog | None = None
        (directory / "rabbitmq.conf").write_text(
            f"listeners.tcp.1 = 127.0.0.1:{self.port}\n"
            "loopback_users.guest = true\n"
            "disk_free_limit.absolute = 1MB\n"
            "log.console = false\n"
            "log.file.level = warning\n"
        )
        (directory / "enabled_plugins").write_text("[].\n")
        (directory / "rabbitmq-env.conf").write_text("")
        self._environment = {
            **os.environ,
            "HOME": str(directory),  # the Erlang cookie is written there
            "RABBITMQ_NODENAME": f"outbox_test_{uuid.uuid4().hex[:10]}@localhost",
            "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
            "RABBITMQ_NODE_PORT": str(self.port),
            "RABBITMQ_DIST_PORT": str(free_port()),
            "RABBITMQ_CONFIG_FILE": str(directory / "rabbitmq.conf"),
            "RABBITMQ_CONF_ENV_FILE": str(directory / "rabbitmq-env.conf"),
            "RABBITMQ_ENABLED_PLUGINS_FILE": str(directory / "enabled_plugins"),
            "RABBITMQ_MNESIA_BASE": str(directory / "mnesia"),
            "RABBITMQ_LOG_BASE": str(directory / "log"),
            "RABBITMQ_PID_FILE": str(directory / "rabbitmq.pid"),
            "RABBITMQ_PLUGINS_EXPAND_DIR": str(directory / "plugins-expand"),
        }

    def start(self) -> None:
        """Start the node (again, with its queues and persistent messages) and wait for AMQP."""
        log = (self.directory / "server.out").open("ab")
        self._process = subprocess.Popen(
            [self.command],
            cwd=self.directory,
            env=self._environment,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, for stop()
        )
        log.close()
        self._watchdog = Watchdog(self._process.pid)
        deadline = time.monotonic() + START_SECONDS
        while True:
            if self._process.poll() is not None:
                raise RuntimeError(f"rabbitmq-server exited: {self._tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"rabbitmq-server not ready in {START_SECONDS:g} s")
            try:
                pika.BlockingConnection(self.parameters(timeout=2)).close()
                return
            except pika.exceptions.AMQPError:
                time.sleep(0.25)

    def stop(self) -> None:
        """Stop the node and everything it started (SIGTERM to its group, SIGKILL if it
        lingers)."""
        process, self._process = self._process, None
        if self._watchdog is not None:
            self._watchdog.disarm()
            self._watchdog = None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(STOP_SECONDS)
        # The Erlang VM may outlive the script that started it for a moment.
        for _ in range(int(STOP_SECONDS * 10)):
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        os.killpg(process.pid, signal.SIGKILL)

    def ctl(self, *arguments: str) -> str:
        """`rabbitmqctl` against this node (to raise and clear alarms, list connections)."""
        command = str(Path(self.command).with_name("rabbitmqctl"))
        node = self._environment["RABBITMQ_NODENAME"]
        done = subprocess.run(
            [command, "-n", node, *arguments],
            env=self._environment,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout

    def parameters(self, timeout: float = 5.0) -> pika.URLParameters:
        parameters = pika.URLParameters(self.url)
        parameters.socket_timeout = timeout
        parameters.stack_timeout = timeout
        parameters.blocked_connection_timeout = timeout
        return parameters

    def _tail(self) -> str:
        text = (self.directory / "server.out").read_text(errors="replace")
        return text[-2000:]


@pytest.fixture(scope="session", name="rabbitmq")
def rabbitmq_node() -> Iterator[Broker]:
    """A RabbitMQ node for the whole session (tests use names of their own in it)."""
    command = server_command()
    if command is None:
        pytest.skip("rabbitmq-server is not installed: apt-get install rabbitmq-server")
    with tempfile.TemporaryDirectory(prefix="outbox-rabbitmq-") as directory:
        broker = started(command, Path(directory))
        try:
            yield broker
        finally:
            broker.stop()


def started(command: str, directory: Path, tries: int = 3) -> Broker:
    """A started node in a fresh subdirectory of `directory`; tried again on new ports when
    it exits at start (a free port taken by another process in between, say)."""
    for attempt in range(1, tries + 1):
        broker = Broker(command, directory / f"node-{attempt}")
        try:
            broker.start()
            return broker
        except RuntimeError:
            broker.stop()
            if attempt == tries:
                raise
    raise AssertionError("unreachable")
