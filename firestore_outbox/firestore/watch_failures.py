"""Where the error a follow-mode listener's stream ends with goes: to the listeners running,
not to stderr.

google-cloud-firestore's `Watch` reports a stream that ended for good only by raising the error
in a thread of its own (`raw.FAILURE_THREAD`), which Python prints as a bare traceback.

- `route_watch_failures()` (opt-in: the `outbox` command calls it; nothing here replaces a
  process-wide hook by default) installs a `threading.excepthook` that hands the errors those
  threads raise to the `on_failure` of every `watch_failures(on_failure)` block running, and
  every other thread's exception to the hook that was there before;
- without it `watch_failures` routes nothing: the listener still sees the stream end
  (`is_active`) and Python prints the error as it would anyway.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from firestore_outbox.firestore import raw

__all__ = ["route_watch_failures", "watch_failures"]

# The `on_failure` of each `watch_failures` block running (a list: one callable may be in twice).
_on_failure: list[Callable[[BaseException], None]] = []
_routing = threading.Lock()
_routed = False


def route_watch_failures() -> None:
    """Opt in, once per process: the error a `Watch` ends with goes to the `on_failure` of the
    `watch_failures` blocks running instead of stderr (`threading.excepthook`, wrapping the
    hook set now, so call it after any hook of your own); other threads' go to that hook."""
    global _routed
    with _routing:
        if _routed:
            return
        _routed = True
        previous = threading.excepthook

        def hook(args: Any) -> None:
            thread, error = args.thread, args.exc_value
            with _routing:
                takers = list(_on_failure)
            if thread is not None and thread.name == raw.FAILURE_THREAD and error and takers:
                for on_failure in takers:
                    on_failure(error)
            else:
                previous(args)

        threading.excepthook = hook


@contextmanager
def watch_failures(on_failure: Callable[[BaseException], None]) -> Iterator[None]:
    """While inside, the error a `Watch` ends with goes to `on_failure` (with any other block
    running, to theirs too: a listener only reads it once its own stream has ended) if the
    process opted in with `route_watch_failures()`; otherwise nothing is routed."""
    with _routing:
        _on_failure.append(on_failure)
    try:
        yield
    finally:
        with _routing:
            _on_failure.remove(on_failure)
