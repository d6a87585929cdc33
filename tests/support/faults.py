"""Faults on a Firestore client's gRPC channel, against the real emulator.

`FaultInjector` sits where `firestore_outbox.testing.metering` puts its meter: between the client
library (with its retry layer) and the network. A fault either stops a call before it leaves
(Firestore never sees it) or lets it through, waits for Firestore's answer, and raises instead (the
write landed, its answer was lost), which is what a dropped connection does to a `Commit`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.cloud import firestore

from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.testing.emulator import FirestoreEmulator
from firestore_outbox.testing.metering import intercept


class RpcFault(grpc.RpcError):  # type: ignore[misc]
    """A failed call as gRPC hands it to an interceptor: an error that is also its outcome
    (`result()` raises it); the client library reads `code()` and `details()`."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(details)
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> None:
        return None

    def result(self, timeout: float | None = None) -> Any:
        raise self

    def exception(self, timeout: float | None = None) -> RpcFault:
        return self


@dataclass
class _Fault:
    method: str
    code: grpc.StatusCode
    after_call: bool
    times: int
    when: Callable[[Any], bool] | None = None
    stall: bool = False


_PARTITION_EQUALS = re.compile(
    r'field_path: "partition"\s*}\s*op: EQUAL\s*value\s*{\s*integer_value: (\d+)'
)


def page_of(partition: int) -> Callable[[Any], bool]:
    """A `when` for `FaultInjector.fail`: a page query of `partition` (`open_events`: the
    partition filter, no `held` one)."""

    def matches(request: Any) -> bool:
        text = str(request)
        found = _PARTITION_EQUALS.search(text)
        return found is not None and int(found.group(1)) == partition and '"held"' not in text

    return matches


def survey_read(request: Any) -> bool:
    """A timer run's first read: a few open events, their partition and sequence only."""
    text = str(request)
    return "select" in text and 'field_path: "sequence"' in text


def held_read(request: Any) -> bool:
    """The read of the events that hold their aggregates, over the whole collection."""
    text = str(request)
    return '"held"' in text and 'field_path: "partition"' not in text


def recheck_read(request: Any) -> bool:
    """A re-check after a release: one open event of a partition (a page of one)."""
    text = " ".join(str(request).split())
    return _PARTITION_EQUALS.search(str(request)) is not None and "limit { value: 1 }" in text


def due_read(request: Any) -> bool:
    """A per-event lease's query for `PENDING` events due by now."""
    text = str(request)
    due = '"nextAttemptAt"' in text and '"PENDING"' in text and "LESS_THAN_OR_EQUAL" in text
    return due and "structured_aggregation_query" not in text


def count_read(request: Any) -> bool:
    """An aggregation (a count), such as a backlog run's look for events to heal."""
    return "structured_aggregation_query" in str(request)


def nth(n: int, match: Callable[[Any], bool]) -> Callable[[Any], bool]:
    """A `when` for `FaultInjector.fail`: only the `n`-th request (from 1) `match` accepts."""
    seen = [0]

    def matches(request: Any) -> bool:
        if not match(request):
            return False
        seen[0] += 1
        return seen[0] == n

    return matches


class FaultInjector(
    grpc.UnaryUnaryClientInterceptor,  # type: ignore[misc]
    grpc.UnaryStreamClientInterceptor,  # type: ignore[misc]
):
    """Fails the next calls of a method as told; `injected` counts the faults raised."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[_Fault] = []
        self.injected = 0

    def fail(
        self,
        method: str,
        code: grpc.StatusCode,
        *,
        after_call: bool = False,
        times: int = 1,
        when: Callable[[Any], bool] | None = None,
        stall: bool = False,
    ) -> None:
        """Fail the next `times` calls of `method` (e.g. "Commit") with `code`; with
        `after_call` each call reaches Firestore first (unary calls only); `when`: only the
        calls whose request it accepts; `stall`: each waits out the call's own deadline
        first, as a read Firestore never answers does (`code` is then DEADLINE_EXCEEDED)."""
        with self._lock:
            self._faults.append(_Fault(method, code, after_call, times, when, stall))

    def _take(self, details: grpc.ClientCallDetails, request: Any = None) -> _Fault | None:
        name = details.method
        method = (name.decode() if isinstance(name, bytes) else str(name)).rsplit("/", 1)[-1]
        with self._lock:
            for fault in self._faults:
                if fault.when is not None and not fault.when(request):
                    continue
                if fault.method == method and fault.times > 0:
                    fault.times -= 1
                    self.injected += 1
                    return fault
        return None

    def intercept_unary_unary(
        self, continuation: Callable[..., Any], details: grpc.ClientCallDetails, request: Any
    ) -> Any:
        fault = self._take(details, request)
        if fault is None:
            return continuation(details, request)
        self._stall(fault, details)
        if fault.after_call:
            continuation(details, request).result()  # it lands; its answer goes nowhere
        return RpcFault(fault.code, f"injected {fault.code.name} on {fault.method}")

    def intercept_unary_stream(
        self, continuation: Callable[..., Any], details: grpc.ClientCallDetails, request: Any
    ) -> Iterator[Any]:
        fault = self._take(details, request)
        if fault is None:
            return continuation(details, request)  # type: ignore[no-any-return]
        self._stall(fault, details)
        raise RpcFault(fault.code, f"injected {fault.code.name} on {fault.method}")

    @staticmethod
    def _stall(fault: _Fault, details: grpc.ClientCallDetails) -> None:
        if fault.stall and details.timeout is not None:
            threading.Event().wait(details.timeout)  # the call's deadline passes unanswered


def faulty_client(settings: Settings) -> tuple[firestore.Client, FaultInjector]:
    """A client of its own on the test emulator, with a `FaultInjector` on its channel."""
    client = get_db_client(settings)
    faults = FaultInjector()
    intercept(client, faults)
    return client, faults


@pytest.fixture(scope="module", name="frozen_emulator")
def stopped_emulator() -> Iterator[str]:
    """An emulator of the module's own, frozen with SIGSTOP: requests hang unanswered."""
    with FirestoreEmulator() as emulator:
        emulator.pause()
        try:
            yield emulator.host_port
        finally:
            emulator.resume()
