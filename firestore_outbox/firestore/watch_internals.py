"""The two places follow mode reaches inside google-cloud-firestore's `Watch` (a listener).

`Watch` reports a stream that ended for good only by raising the error in a thread of its own
(`Thread-OnRpcTerminated`), which Python prints as a bare traceback on stderr; and it re-opens
a stream that failed with a "recoverable" error (UNAVAILABLE among them) at once and forever:
with Firestore unreachable, that loop burns a whole CPU core. Both are fixed here, and only
here, so a client upgrade that moves them breaks one module, which
`tests/unit/test_watch_internals.py` pins:

- `watch_failures(on_failure)` routes the errors those threads raise to `on_failure`;
- `give_up_when_reconnecting_in_a_loop(watch)` lets the stream re-open a few times (a server
  closing a long-lived stream is normal) and ends it with `ServiceUnavailable` when it keeps
  failing, so the listener is reported down and `Listener` takes over with its own backoff.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from google.api_core import exceptions as google_exceptions
from google.cloud.firestore_v1 import watch as watch_module

if TYPE_CHECKING:
    from google.cloud.firestore import Watch

FAILURE_THREAD: str = watch_module._RPC_ERROR_THREAD_NAME
# More re-opens than this within the window means the stream is not coming back by itself.
REOPENS_ALLOWED = 3
REOPEN_WINDOW_SECONDS = 10.0


@contextmanager
def watch_failures(on_failure: Callable[[BaseException], None]) -> Iterator[None]:
    """While inside, the error a `Watch` ends with goes to `on_failure` instead of stderr;
    every other thread's uncaught exception goes to the hook that was there before."""
    previous = threading.excepthook

    def hook(args: Any) -> None:
        thread = args.thread
        if thread is not None and thread.name == FAILURE_THREAD and args.exc_value is not None:
            on_failure(args.exc_value)
        else:
            previous(args)

    threading.excepthook = hook
    try:
        yield
    finally:
        threading.excepthook = previous


class _GiveUpInALoop:
    """The `ResumableBidiRpc` re-open throttle slot: entered before each re-open; raising
    ends the stream with that error (the RPC finalizes and the Watch closes)."""

    def __init__(self) -> None:
        self._reopens: deque[float] = deque()

    def __enter__(self) -> None:
        now = time.monotonic()
        while self._reopens and self._reopens[0] < now - REOPEN_WINDOW_SECONDS:
            self._reopens.popleft()
        if len(self._reopens) >= REOPENS_ALLOWED:
            raise google_exceptions.ServiceUnavailable(  # type: ignore[no-untyped-call]
                f"listener stream failed {REOPENS_ALLOWED + 1} times within "
                f"{REOPEN_WINDOW_SECONDS:g}s: Firestore unreachable"
            )
        self._reopens.append(now)

    def __exit__(self, *_: object) -> None:
        return None


def give_up_when_reconnecting_in_a_loop(watch: Watch) -> None:
    """Make `watch` end with `ServiceUnavailable` instead of re-opening in a tight loop."""
    rpc = getattr(watch, "_rpc", None)
    if rpc is not None:  # None: the watch already closed, nothing left to pace
        rpc._reopen_throttle = _GiveUpInALoop()
