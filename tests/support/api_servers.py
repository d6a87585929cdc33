"""The order API as a real server process (`outbox api`, or the hooked test server)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.watchdog import Watchdog

HOOKED = Path(__file__).with_name("api_hooked_server.py")
OUTBOX = Path(sys.executable).with_name("outbox")


def api_environment(settings: Settings, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IDEMPOTENCY_", "FIRESTORE_"))}
    env.update(
        FIRESTORE_EMULATOR_HOST=str(settings.emulator_host),
        FIRESTORE_PROJECT_ID=str(settings.project_id),
        LOG_LEVEL="WARNING",
        # The reference order API (app/) runs from this checkout, not from the wheel.
        PYTHONPATH=str(HOOKED.parents[2]),  # the repository's root
        **variables,
    )
    return env


@contextmanager
def api_server(
    settings: Settings,
    *,
    hooked: bool = False,
    args: Sequence[str] = (),
    serve: str = "api",
    **variables: str,
) -> Iterator[ApiProcess]:
    """Start the API on a free port; yield it once it listens; stop it (SIGKILL at worst).

    `args` are more options of `outbox api` (not of the hooked server); `serve` names another
    serving command (`console`).
    """
    command = [sys.executable, str(HOOKED)] if hooked else [str(OUTBOX), serve, "--port", "0"]
    command += args
    process = subprocess.Popen(
        command,
        env=api_environment(settings, **variables),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group of its own for the watchdog to end
    )
    # A test run killed outright must not leave the server listening
    # (firestore_outbox/testing/watchdog.py).
    watchdog = Watchdog(process.pid)
    server = ApiProcess(process)
    try:
        server.wait_listening()
        yield server
    finally:
        watchdog.disarm()
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


class ApiProcess:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.url = ""

    def wait_listening(self, timeout: float = 30.0) -> None:
        found: list[str] = []

        def read() -> None:
            assert self.process.stdout is not None
            found.append(self.process.stdout.readline())

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        line = found[0] if found else ""
        if not line.startswith("listening on "):
            self.process.kill()
            _, err = self.process.communicate(timeout=10)
            raise AssertionError(f"the API did not start: {line!r} {err[-2000:]}")
        self.url = line.split("listening on ", 1)[1].strip()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
