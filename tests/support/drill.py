"""The drill's moving parts: `outbox` processes to kill and restart, and a chaos proxy.

relay processes ──POST──▶ ChaosProxy (this process) ──▶ receiver processes ──▶ emulator
                          defers some (503), replays some at once and some seconds later
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import requests

from firestore_outbox.consumer.receiver import Received, ReceiverAnswer

OUTBOX = shutil.which("outbox") or os.path.join(os.path.dirname(sys.executable), "outbox")


class Fleet:
    """`outbox <command>` processes of one kind: started, SIGKILLed and restarted on demand."""

    def __init__(self, name: str, env: dict[str, str], logs: Path) -> None:
        self.name, self._env, self._logs = name, env, logs
        self.running: dict[int, tuple[subprocess.Popen[bytes], list[str], Path]] = {}
        self.started = self.killed = 0
        self._started_at: dict[int, float] = {}
        self.exits: list[tuple[int, Path]] = []  # return code and log of each clean exit

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        self.started += 1
        log = self._logs / f"{self.name}-{self.started}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [OUTBOX, *args], env=self._env, stdout=out, stderr=subprocess.STDOUT
            )
        self.running[process.pid] = (process, list(args), log)
        self._started_at[process.pid] = time.monotonic()
        return process

    def kill_one(self, rng: random.Random) -> list[str] | None:
        """SIGKILL a random running process; return its arguments (to restart it)."""
        if not self.running:
            return None
        pid = rng.choice(sorted(self.running))
        process, args, _ = self.running.pop(pid)
        os.kill(pid, signal.SIGKILL)
        process.wait()
        self.killed += 1
        return args

    def youngest(self) -> float:
        """Seconds since the most recent of the running processes started."""
        now = time.monotonic()
        return min((now - self._started_at[pid] for pid in self.running), default=now)

    def reap(self) -> list[list[str]]:
        """Forget processes that exited on their own; return their arguments."""
        done = []
        for pid, (process, args, log) in list(self.running.items()):
            if process.poll() is not None:
                del self.running[pid]
                self.exits.append((process.returncode, log))
                done.append(args)
        return done

    def stop(self) -> None:
        for process, _, _ in self.running.values():
            process.kill()
            process.wait()
        self.running.clear()


class ChaosProxy:
    """A responder for `firestore_outbox.consumer.receiver.Receiver` that forwards each delivery to
    one of the
    receiver processes and injects faults: deferrals (503 before forwarding: the event comes
    back later, out of order), immediate duplicates, and replays seconds later."""

    def __init__(self, backends: list[str], rng: random.Random, *, timeout: float) -> None:
        self.backends, self._rng, self._timeout = backends, rng, timeout
        self.faults = True
        self.counts: Counter[str] = Counter()
        self.delivered: Counter[str] = Counter()  # requests that reached a receiver, per event
        self._lock = threading.Lock()
        self._replays: list[threading.Thread] = []

    def __call__(self, request: Received) -> ReceiverAnswer:
        event_id = str(request.event_id)
        with self._lock:
            roll = self._rng.random() if self.faults else 1.0
            delay = self._rng.uniform(0.5, 3.0)
        if roll < 0.08:
            self._count("deferred")
            return ReceiverAnswer(503, (("Retry-After", "0"),), b"deferred by the drill")
        if roll < 0.16:
            self._count("injected")
            self._replay(request, 0.0)
        elif roll < 0.24:
            self._count("injected")
            self._replay(request, delay)
        return self.forward(request, event_id)

    def forward(self, request: Received, event_id: str) -> ReceiverAnswer:
        for backend in self._rng.sample(self.backends, len(self.backends)):
            try:
                response = requests.post(
                    backend, data=request.body, headers=request.headers, timeout=self._timeout
                )
            except requests.ConnectionError:
                continue  # that receiver is down (killed, restarting): try the next
            except requests.Timeout:  # it arrived; whether it was applied is unknown
                self._count("timeout")
                self._delivered(event_id)
                return ReceiverAnswer(504, body=b"receiver timed out")
            self._delivered(event_id)
            status = _status_of(response)
            self._count(f"answer:{response.status_code}:{status}")
            return ReceiverAnswer(response.status_code, body=response.content)
        self._count("no receiver up")
        return ReceiverAnswer(502, body=b"no receiver up")

    def wait_for_replays(self) -> None:
        for thread in self._replays:
            thread.join()

    def _replay(self, request: Received, delay: float) -> None:
        def later() -> None:
            time.sleep(delay)
            self.forward(request, str(request.event_id))

        thread = threading.Thread(target=later, daemon=True)
        with self._lock:
            self._replays.append(thread)
        thread.start()

    def _delivered(self, event_id: str) -> None:
        with self._lock:
            self.delivered[event_id] += 1

    def _count(self, what: str) -> None:
        with self._lock:
            self.counts[what] += 1


def _status_of(response: requests.Response) -> Any:
    try:
        return response.json().get("status")
    except ValueError:
        return None
