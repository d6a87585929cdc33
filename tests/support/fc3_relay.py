"""Function Compute 3.0 running the relay function: its async InvokeFunction API (`Fc3Endpoint`,
which checks every request's V3 signature) answers 202, then runs the relay handler with the
invocation's event in a NEW PROCESS per invocation (`tests.support.handler_process`), as Function
Compute runs an instance, with the function's own `environment`; and its HTTP trigger
(`http_trigger`), which hands `http_handler` each request as FC 3.0's HTTP event."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from firestore_outbox.config.loader import Configuration
from firestore_outbox.consumer.receiver import Received, ReceiverAnswer
from firestore_outbox.function_compute import RelayFunction as RelayHandlers
from tests.support.fc3_http import answer_of, http_event
from tests.support.fc3_server import Fc3Endpoint
from tests.support.fc_invocation import fc_context

ROOT = Path(__file__).resolve().parents[2]
KEY_ID, SECRET = "AKID-nudge", "nudge-secret"


class RelayFunction:
    """Responder for a `Receiver`: accepts signed async invocations of `function` and runs
    each in a process of its own; `summaries` holds what each returned."""

    def __init__(self, environment: dict[str, str], function: str = "relay") -> None:
        self.api = Fc3Endpoint(keys={KEY_ID: SECRET}, functions={function})
        self.environment = environment
        self.invocations: list[Received] = []
        self.summaries: list[dict[str, Any]] = []
        self.failures: list[str] = []
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        # The HTTP-triggered function's warm instance (`http_trigger`).
        self._instance = RelayHandlers(lambda: Configuration.load(self.environment))

    def caller_environment(self, url: str, function: str = "relay") -> dict[str, str]:
        """The variables a producer (or fan-out) needs to invoke this function."""
        return {
            "RELAY_FAN_OUT_ENDPOINT": url.removesuffix("/events"),
            "RELAY_FAN_OUT_FUNCTION": function,
            "ALIBABA_CLOUD_ACCESS_KEY_ID": KEY_ID,
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": SECRET,
        }

    def __call__(self, request: Received) -> ReceiverAnswer:
        answer = self.api(request)
        if answer.status == 202:
            self._start(request)
        return answer

    def http_trigger(self, request: Received) -> ReceiverAnswer:
        """A relay behind an HTTP trigger (`OUTBOX_NUDGE=http`), as FC 3.0 runs one: the
        request wrapped as its event (`tests.support.fc3_http`) for `http_handler` on one warm
        instance (in this process, with the function's `environment`), its response struct
        answered; `summaries` holds the answers' bodies."""
        with self._lock:
            self.invocations.append(request)
            request_id = f"invocation-{len(self.invocations)}"
        headers = {name: value for name, value in request.headers.items() if name != "host"}
        event = http_event("POST", request.path, request.body, **headers)
        response = self._instance.http_handler(event, fc_context(request_id))
        with self._lock:
            self.summaries.append(json.loads(response["body"]))
        return answer_of(response)

    def _start(self, request: Received) -> None:
        with self._lock:
            self.invocations.append(request)
            request_id = f"invocation-{len(self.invocations)}"
            run = threading.Thread(target=self._run, args=(request.body, request_id))
            self._threads.append(run)
        run.start()

    def wait(self, timeout: float = 60.0) -> None:
        """Wait for every invocation started so far to end."""
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout)

    def _run(self, event: bytes, request_id: str, *flags: str) -> dict[str, Any] | None:
        done = subprocess.run(
            [sys.executable, "-m", "tests.support.handler_process", request_id, *flags],
            input=event,
            capture_output=True,
            env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), **self.environment},
            cwd=ROOT / "tests",  # no .env file there
            timeout=120,
            check=False,
        )
        out = done.stdout.decode(errors="replace")
        with self._lock:
            if "\nSUMMARY " not in out:
                self.failures.append(done.stderr.decode(errors="replace")[-2000:])
                return None
            summary: dict[str, Any] = json.loads(out.rsplit("\nSUMMARY ", 1)[1])
            self.summaries.append(summary)
            return summary
