"""Function Compute 3.0 running the relay function, for `bench_nudge.py`: its async
InvokeFunction API (`tests.support.fc3_server.Fc3Endpoint`, which checks the V3 signature) answers
202, then runs the invocation on an instance, as Function Compute does: an idle warm
instance if there is one (a process started earlier, `fc_instance.py`, that keeps its imports,
its Firestore channel and its relay between invocations), else a NEW instance (a cold start:
a process started and its imports paid before the invocation runs; counted in
`coldStarts`). Each instance runs one invocation at a time (instance concurrency 1, FC's
default); instances are never reclaimed within a run. `warm(n)` starts n instances before the
stream, as a function with minimum instances (provisioned) has them; `max_instances` caps them
as the function's instance limit does: past it, an invocation waits for an instance to free,
as FC queues an async invocation. `refuse_nudges` answers every nudge 503: 100% of them
dropped."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import nudge_trace

from firestore_outbox.consumer.receiver import Received, ReceiverAnswer
from firestore_outbox.nudge.message import NUDGE_TYPE
from tests.support.fc3_server import Fc3Endpoint, error

KEY_ID, SECRET = "AKID-bench", "bench-secret"
INSTANCE = Path(__file__).with_name("fc_instance.py")


class _Instance:
    """One instance process; `busy` while it runs an invocation."""

    def __init__(self, function: RelayFunction) -> None:
        self.busy = True  # taken by the invocation that started it
        self.process = subprocess.Popen(
            [sys.executable, str(INSTANCE)],
            env={**function.environment, "PYTHONPATH": str(INSTANCE.parent.parent)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.ready = threading.Event()
        self.started = time.monotonic()
        threading.Thread(target=function._read, args=(self,), daemon=True).start()

    def run(self, request_id: str, event: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"id": request_id, "event": event.decode()}) + "\n")
        self.process.stdin.flush()


class RelayFunction:
    def __init__(
        self, environment: dict[str, str], *, refuse_nudges: bool = False, max_instances: int = 0
    ) -> None:
        self.max_instances = max_instances  # 0: no limit
        self._queued: list[tuple[str, bytes]] = []
        self.api = Fc3Endpoint(keys={KEY_ID: SECRET}, functions={"relay"})
        self.environment = environment
        self.refuse_nudges = refuse_nudges
        self.invocations = 0
        self.nudges = 0
        self.refused = 0
        self.cold_starts = 0
        self.cold_start_seconds: list[float] = []  # process start to `ready`
        self.durations: list[float] = []  # seconds from the invoke to the invocation's end
        self._lock = threading.Lock()
        self._ended = threading.Condition(self._lock)
        self._instances: list[_Instance] = []
        self._running: dict[str, float] = {}
        self.last_nudge: str | None = None  # the request id of the last nudge taken

    def caller_environment(self, url: str) -> dict[str, str]:
        return {
            "RELAY_FAN_OUT_ENDPOINT": url.removesuffix("/events"),
            "RELAY_FAN_OUT_FUNCTION": "relay",
            "ALIBABA_CLOUD_ACCESS_KEY_ID": KEY_ID,
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET,
        }

    def __call__(self, request: Received) -> ReceiverAnswer:
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
            request_id = f"invocation-{self.invocations}"
            if nudge:
                self.last_nudge = request_id
                nudge_trace.mark("fc-received", request=request_id)
            self._running[request_id] = time.monotonic()
            idle = next((i for i in self._instances if not i.busy), None)
            if idle is not None:
                idle.busy = True
                nudge_trace.mark("fc-dispatched", request=request_id, warm=True)
                idle.run(request_id, event)
                return
            if self.max_instances and len(self._instances) >= self.max_instances:
                self._queued.append((request_id, event))  # FC's queue: the next free instance
                return
            self.cold_starts += 1
            instance = _Instance(self)
            self._instances.append(instance)
        # A cold start: the invocation waits for the instance's imports, off the API's thread.
        threading.Thread(target=self._first, args=(instance, request_id, event)).start()

    def _first(self, instance: _Instance, request_id: str, event: bytes) -> None:
        if instance.ready.wait(60):
            nudge_trace.mark("fc-dispatched", request=request_id, cold=True)
            instance.run(request_id, event)

    def warm(self, count: int) -> None:
        """Start instances until `count` are up, each ready before this returns."""
        with self._lock:
            started = [_Instance(self) for _ in range(count - len(self._instances))]
            self._instances.extend(started)
        for instance in started:
            instance.ready.wait(120)
            instance.busy = False

    def wait(self, timeout: float = 120.0) -> None:
        with self._ended:
            self._ended.wait_for(lambda: not self._running, timeout)

    def close(self) -> None:
        with self._lock:
            instances = list(self._instances)
        for instance in instances:
            assert instance.process.stdin is not None
            instance.process.stdin.close()
        for instance in instances:
            instance.process.wait(30)

    def _read(self, instance: _Instance) -> None:
        assert instance.process.stdout is not None
        for line in instance.process.stdout:
            if line.startswith("ready"):
                with self._lock:
                    self.cold_start_seconds.append(time.monotonic() - instance.started)
                instance.ready.set()
            if not line.startswith("done "):
                continue
            with self._ended:
                began = self._running.pop(line.split()[1], None)
                if began is not None:
                    self.durations.append(time.monotonic() - began)
                if self._queued:
                    nudge_trace.mark("fc-dispatched", request=self._queued[0][0], queued=True)
                    instance.run(*self._queued.pop(0))
                else:
                    instance.busy = False
                self._ended.notify_all()


def timer_event() -> bytes:
    return b'{"triggerName": "relay-timer", "payload": ""}'


def report(function: RelayFunction) -> dict[str, Any]:
    runs = sorted(d * 1000 for d in function.durations)
    cold = sorted(function.cold_start_seconds)
    return {
        "invocations": function.invocations,
        "nudges": function.nudges,
        "instances": len(function._instances),
        "coldStarts": function.cold_starts,
        "coldStartMsP50": round(cold[len(cold) // 2] * 1000) if cold else None,
        "invocationMsP50": round(runs[len(runs) // 2], 1) if runs else None,
        "invocationMsP99": round(runs[int(len(runs) * 0.99)], 1) if runs else None,
    }
