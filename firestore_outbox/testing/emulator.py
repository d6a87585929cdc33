"""Start, reset and stop a local Firestore emulator (for the demo and the tests).

The launcher is a shell script that leaves a Java child behind when killed, so the emulator
runs in its own process group and the whole group is ended; a watchdog ends it too when the
process that started it dies without stopping it (firestore_outbox/testing/watchdog.py).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import NoReturn

import requests

from firestore_outbox.errors import OutboxError
from firestore_outbox.testing.watchdog import Watchdog

LAUNCHER_ENV = "FIRESTORE_EMULATOR_LAUNCHER"
_LAUNCHER_IN_SDK = "platform/cloud-firestore-emulator/cloud_firestore_emulator"
_KNOWN_SDK_ROOTS = ("/usr/lib/google-cloud-sdk", "/usr/share/google-cloud-sdk")


class EmulatorError(OutboxError, RuntimeError):
    """The emulator could not be found, started or reset."""


def find_launcher() -> Path:
    """The `cloud_firestore_emulator` script: `$FIRESTORE_EMULATOR_LAUNCHER` or the gcloud SDK's."""
    candidates = [os.environ.get(LAUNCHER_ENV, "")]
    gcloud = shutil.which("gcloud")
    if gcloud:
        # gcloud lives in SDK_ROOT/bin, usually behind a symlink.
        candidates.append(str(Path(gcloud).resolve().parent.parent / _LAUNCHER_IN_SDK))
    candidates += [f"{root}/{_LAUNCHER_IN_SDK}" for root in _KNOWN_SDK_ROOTS]
    for candidate in filter(None, candidates):
        if Path(candidate).is_file():
            return Path(candidate)
    raise EmulatorError(
        "Firestore emulator not found: install the Debian package "
        f"google-cloud-cli-firestore-emulator (and Java 17), or set {LAUNCHER_ENV}"
    )


_EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_IANA_EPHEMERAL = (49152, 65535)
_LOWEST_PICK = 10000  # below it live the well-known services a machine may start later
_PICKS = 200


def ephemeral_ports() -> tuple[int, int]:
    """The kernel's range for the local ports of outgoing connections (Linux's setting;
    IANA's 49152-65535 elsewhere)."""
    try:
        low, high = (int(part) for part in _EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return _IANA_EPHEMERAL
    return low, high


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on at `host` now, chosen outside the ephemeral range.

    A server is started on the port after the probe has released it, and some (a restarted
    broker, an emulator brought back after an outage drill) bind it again later: a port from
    the ephemeral range could meanwhile become the local end of any process's outgoing
    connection, and the bind would fail with EADDRINUSE. Outside that range only an explicit
    bind can take it.
    """
    low, high = ephemeral_ports()
    for _ in range(_PICKS):
        port = random.randrange(_LOWEST_PICK, 65536)
        if low <= port <= high:
            continue
        with socket.socket() as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:  # nothing outside the range is free: any free port
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class FirestoreEmulator:
    """A Firestore emulator on `host:port`; use as a context manager or call start()/stop()."""

    def __init__(
        self, host: str = "127.0.0.1", port: int | None = None, *, rules: Path | None = None
    ) -> None:
        """`rules`: a security rules file to enforce on client requests (`--rules`)."""
        self.host = host
        self.port = port or free_port(host)
        self.rules = rules
        self._process: subprocess.Popen[bytes] | None = None
        self._watchdog: Watchdog | None = None
        self._command: list[str] = []

    @property
    def host_port(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 60.0) -> None:
        """Start the emulator and wait until it answers, at most `timeout` seconds. A port
        already taken is refused first: the readiness check would be answered by whatever
        holds it (another emulator, say) and report success for an emulator that died."""
        try:
            with socket.socket() as probe:
                probe.bind((self.host, self.port))
        except OSError as exc:
            raise EmulatorError(
                f"cannot start the emulator on {self.host_port}: {exc.strerror or exc}"
            ) from None
        # Lives from start() to stop(), so it cannot be a with-block.
        self._log = tempfile.NamedTemporaryFile(prefix="firestore-emulator-", suffix=".log")  # noqa: SIM115
        self._command = [
            str(find_launcher()),
            "start",
            f"--host={self.host}",
            f"--port={self.port}",
        ]
        if self.rules is not None:
            self._command.append(f"--rules={Path(self.rules).resolve()}")
        self._process = subprocess.Popen(
            self._command,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._watchdog = Watchdog(self._process.pid)
        deadline = time.monotonic() + timeout
        delay = 0.1
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                self._fail("emulator exited early")
            try:
                if requests.get(f"http://{self.host_port}/", timeout=1).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(delay)
            delay = min(delay * 2, 1.0)
        self._fail(f"emulator not ready after {timeout:.0f}s")

    def _fail(self, reason: str) -> NoReturn:
        tail = self.log_tail()
        self.stop()
        raise EmulatorError(f"{reason} (command: {' '.join(self._command)}):\n{tail}")

    def stop(self, timeout: float = 10.0) -> None:
        """End the emulator's whole process group: TERM, then KILL after `timeout` seconds."""
        process, self._process = self._process, None
        if process is None:
            return
        if self._watchdog is not None:
            self._watchdog.disarm()
            self._watchdog = None
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
                os.killpg(process.pid, signal.SIGCONT)  # a paused group must wake to exit
            except ProcessLookupError:
                break
            try:
                process.wait(timeout=timeout)
                _wait_for_group_exit(process.pid, timeout)
                break
            except subprocess.TimeoutExpired:
                continue
        self._log.close()

    def pause(self) -> None:
        """Freeze the emulator (SIGSTOP to its group): requests hang, as in a network partition."""
        self._signal_group(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal_group(signal.SIGCONT)

    def _signal_group(self, sig: signal.Signals) -> None:
        if self._process is None:
            raise EmulatorError("the emulator is not running")
        os.killpg(self._process.pid, sig)

    def log_tail(self, lines: int = 20) -> str:
        self._log.flush()
        text = Path(self._log.name).read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def __enter__(self) -> FirestoreEmulator:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


def reset_emulator(host_port: str, project: str) -> None:
    """Delete every document of `project`'s default database on the emulator at `host_port`."""
    url = f"http://{host_port}/emulator/v1/projects/{project}/databases/(default)/documents"
    response = requests.delete(url, timeout=10)
    if not response.ok:
        raise EmulatorError(f"reset failed: HTTP {response.status_code} {response.text}")


def _wait_for_group_exit(pgid: int, timeout: float) -> None:
    """Wait until no process is left in group `pgid` (the launcher's Java child included)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise subprocess.TimeoutExpired(f"process group {pgid}", timeout)
