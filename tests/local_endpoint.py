"""The plumbing the tests' local cloud API servers share (`tests/mns_server.py`,
`tests/eventbridge_server.py`): a real HTTP server (`app.receiver`) on a free local port that
answers each request through the subclass's `handle`, after `latency`. Each server checks its
API's signature in its own `handle`, with its own code: only the plumbing is shared."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TypeVar

from app.receiver import Answer, Received, Receiver

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

    def handle(self, request: Received) -> Answer:
        """The API's answer to `request`, its signature checked first."""
        raise NotImplementedError

    def _respond(self, request: Received) -> Answer:
        time.sleep(self.latency)
        return self.handle(request)
