"""Pins what `firestore_outbox.firestore.raw` relies on inside google-cloud-firestore
and
google-api-core: a client upgrade that moves any of it fails here, not in production."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import bidi
from google.api_core import exceptions as google_exceptions
from google.cloud.firestore_v1 import watch as watch_module

from firestore_outbox.firestore import raw as watch_internals
from firestore_outbox.firestore import watch_failures as routing


class _RefusedCall:
    """A stream call that fails at once, as every call does while Firestore is unreachable."""

    def add_done_callback(self, _callback: Any) -> None:
        return None

    def is_active(self) -> bool:
        return False

    def cancel(self) -> None:
        return None

    def __next__(self) -> Any:
        raise ConnectionRefusedError("connection refused")


def test_the_watch_reports_a_stream_that_ended_for_good_from_the_named_thread() -> None:
    source = inspect.getsource(watch_module.Watch._on_rpc_done)
    assert "name=_RPC_ERROR_THREAD_NAME" in source and "target=self.close" in source
    assert "raise reason" in inspect.getsource(watch_module.Watch.close)
    assert "self._rpc" in inspect.getsource(watch_module.Watch._init_stream)


def test_a_stream_failing_in_a_loop_gives_up_after_a_few_reopens() -> None:
    opened = []

    def start_rpc(_requests: Any, metadata: Any = None) -> _RefusedCall:
        opened.append(1)
        return _RefusedCall()

    rpc = bidi.ResumableBidiRpc(start_rpc, should_recover=lambda _exc: True)
    assert hasattr(rpc, "_reopen_throttle")  # the slot give_up_when_reconnecting_in_a_loop fills
    watch = type("FakeWatch", (), {"_rpc": rpc})()
    watch_internals.give_up_when_reconnecting_in_a_loop(watch)  # type: ignore[arg-type]
    rpc.open()
    with pytest.raises(google_exceptions.ServiceUnavailable, match="Firestore unreachable"):
        rpc.recv()
    assert len(opened) == 1 + watch_internals.REOPENS_ALLOWED
    assert not rpc.is_active


def _fail_in(names: tuple[str, ...]) -> None:
    def fail() -> None:
        raise google_exceptions.PermissionDenied("no")  # type: ignore[no-untyped-call]

    for name in names:
        thread = threading.Thread(target=fail, name=name)
        thread.start()
        thread.join()


@pytest.fixture
def passed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the threads whose exceptions reach the process's hook (a fresh process:
    not opted in)."""
    monkeypatch.setattr(routing, "_routed", False)
    names: list[str] = []
    previous = threading.excepthook
    threading.excepthook = lambda args: names.append(args.thread.name if args.thread else "")
    try:
        yield names
    finally:
        threading.excepthook = previous


def test_without_the_opt_in_watch_failures_leaves_the_process_hook_alone(
    passed: list[str],
) -> None:
    taken: list[BaseException] = []
    own = threading.excepthook
    with routing.watch_failures(taken.append):
        assert threading.excepthook is own
        _fail_in((watch_internals.FAILURE_THREAD,))
    assert taken == []
    assert passed == [watch_internals.FAILURE_THREAD]


def test_once_opted_in_the_watch_thread_errors_are_routed_and_the_rest_passed_on(
    passed: list[str],
) -> None:
    taken: list[BaseException] = []
    routing.route_watch_failures()
    routing.route_watch_failures()  # once per process: the second call is a no-op
    with routing.watch_failures(taken.append):
        _fail_in((watch_internals.FAILURE_THREAD, "some-other-thread"))
    _fail_in((watch_internals.FAILURE_THREAD,))  # no block running: passed on
    assert [type(e) for e in taken] == [google_exceptions.PermissionDenied]
    assert passed == ["some-other-thread", watch_internals.FAILURE_THREAD]
