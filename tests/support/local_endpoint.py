"""The plumbing the tests' local cloud API servers share: `LocalEndpoint`
(`tests/support/mns_server.py`,
`tests/support/eventbridge_server.py`), a real HTTP server (`firestore_outbox.consumer.receiver`)
on a free
local port that answers each request through the subclass's `handle`, after `latency`;
`RecordingResponder` (`tests/support/fc_server.py`, `tests/support/fc3_server.py`), a responder
that records
refusals. Each server checks its API's signature with its own code: only the plumbing is shared."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from typing import ClassVar, TypeVar

from firestore_outbox.consumer.receiver import Received, Receiver, ReceiverAnswer

Self = TypeVar("Self", bound="LocalEndpoint")


@dataclass
class LocalEndpoint:
    """`start()` it; `endpoint` is its URL (no path), `stop()` ends it."""

    latency: float = 0.0  # seconds before each answer (the benchmark's network)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._receiver = Receiver(self._respond)

    @property
    def endpoint(self) -> str:
        return self._receiver.url.removesuffix("/events")

    def start(self: Self) -> Self:
        self._receiver.start()
        return self

    def stop(self) -> None:
        self._receiver.stop()

    def handle(self, request: Received) -> ReceiverAnswer:
        """The API's answer to `request`, its signature checked first."""
        raise NotImplementedError

    def _respond(self, request: Received) -> ReceiverAnswer:
        time.sleep(self.latency)
        return self.handle(request)


@dataclass(kw_only=True)
class RecordingResponder:
    """The plumbing of a responder for `firestore_outbox.consumer.receiver.Receiver` (the Function
    Compute
    endpoints): the subclass's `answer`, and in `refused` the error code of every refusal,
    read from the JSON body's `CODE` field."""

    CODE: ClassVar[str] = "Code"
    refused: list[str] = field(default_factory=list)

    def __call__(self, request: Received) -> ReceiverAnswer:
        answer = self.answer(request)
        if answer.status >= 300:
            self.refused.append(json.loads(answer.body)[self.CODE])
        return answer

    def answer(self, request: Received) -> ReceiverAnswer:
        """The API's answer to `request`, its signature checked first."""
        raise NotImplementedError
