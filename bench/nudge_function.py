"""Function Compute 3.0 running the relay function, for `bench_nudge.py`: its async
InvokeFunction API (`tests.fc3_server.Fc3Endpoint`, which checks the V3 signature) answers
202, then runs the relay handler in a NEW PROCESS per invocation. The processes are forked
from a process that has imported the handler already (`relay_zygote.py`), as a warm
Function Compute runtime has: the figures measure the relay, not Python's imports (a cold
start is a second or two more, and is not what a steady stream meets). `refuse_nudges`
answers every nudge 503: 100% of them dropped."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from firestore_outbox.consumer.receiver import Answer, Received
from firestore_outbox.nudge.wire import NUDGE_TYPE
from tests.fc3_server import Fc3Endpoint, error

KEY_ID, SECRET = "AKID-bench", "bench-secret"
ZYGOTE = Path(__file__).with_name("relay_zygote.py")


class RelayFunction:
    def __init__(self, environment: dict[str, str], *, refuse_nudges: bool = False) -> None:
        self.api = Fc3Endpoint(keys={KEY_ID: SECRET}, functions={"relay"})
        self.environment = environment
        self.refuse_nudges = refuse_nudges
        self.invocations = 0
        self.nudges = 0
        self.refused = 0
        self._lock = threading.Lock()
        self.durations: list[float] = []  # seconds from the invoke to the invocation's end
        self._running: dict[str, float] = {}
        self._ended = threading.Condition(self._lock)
        self._zygote = subprocess.Popen(
            [sys.executable, str(ZYGOTE)],
            env={**environment, "PYTHONPATH": str(ZYGOTE.parent.parent)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._zygote.stdout is not None
        assert self._zygote.stdout.readline().strip() == "ready"
        threading.Thread(target=self._read, daemon=True).start()

    def caller_environment(self, url: str) -> dict[str, str]:
        return {
            "RELAY_FAN_OUT_ENDPOINT": url.removesuffix("/events"),
            "RELAY_FAN_OUT_FUNCTION": "relay",
            "ALIBABA_CLOUD_ACCESS_KEY_ID": KEY_ID,
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET,
        }

    def __call__(self, request: Received) -> Answer:
        if self.refuse_nudges:
            with self._lock:
                self.refused += 1
            return error(503, "ServiceUnavailable")
        answer = self.api(request)
        if answer.status == 202:
            nudge = b'"' + NUDGE_TYPE.encode() + b'"' in request.body
            self.start(request.body, nudge=nudge)
        return answer

    def start(self, event: bytes, *, nudge: bool = False) -> None:
        """Run one invocation (the timer calls this directly, as FC's timer trigger does)."""
        with self._lock:
            self.invocations += 1
            self.nudges += nudge
            request_id = f"invocation-{self.invocations}-{time.monotonic_ns()}"
            self._running[request_id] = time.monotonic()
            assert self._zygote.stdin is not None
            line = json.dumps({"id": request_id, "event": event.decode()})
            self._zygote.stdin.write(line + "\n")
            self._zygote.stdin.flush()

    def wait(self, timeout: float = 120.0) -> None:
        with self._ended:
            self._ended.wait_for(lambda: not self._running, timeout)

    def close(self) -> None:
        assert self._zygote.stdin is not None
        self._zygote.stdin.close()
        self._zygote.wait(30)

    def _read(self) -> None:
        assert self._zygote.stdout is not None
        for line in self._zygote.stdout:
            if not line.startswith("done "):
                continue
            with self._ended:
                began = self._running.pop(line.split()[1], None)
                if began is not None:
                    self.durations.append(time.monotonic() - began)
                self._ended.notify_all()


def timer_event() -> bytes:
    return b'{"triggerName": "relay-timer", "payload": ""}'


def report(function: RelayFunction) -> dict[str, Any]:
    runs = sorted(d * 1000 for d in function.durations)
    return {
        "invocations": function.invocations,
        "nudges": function.nudges,
        "invocationMsP50": round(runs[len(runs) // 2], 1) if runs else None,
    }
