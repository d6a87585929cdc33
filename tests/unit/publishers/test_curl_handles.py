"""The transport's idle handles (`firestore_outbox.publishers.http.curl.Handles`): a handle
taken while `close()` runs is never one that `close()` closes.

`close()` lists the idle handles, then empties the stack, then closes what it listed; `take()`
popped without the lock, so a handle popped between the listing and the emptying was handed
out and closed under its user (a `pycurl.error`, not an answer). The condition is forced: the
listing is paused until the taking thread is seen waiting in `take()`, or has taken.
"""

from __future__ import annotations

import sys
import threading
import time
from collections import deque
from typing import Any

import certifi
import pycurl

from firestore_outbox.publishers.http.curl import Handle, Handles


class PausedListing(deque[Any]):
    """An idle stack whose listing (in `close()`) waits until `resume` is set."""

    def __init__(self, items: list[Any]) -> None:
        super().__init__(items)
        self.listing, self.resume = threading.Event(), threading.Event()

    def __iter__(self) -> Any:
        items = list(super().__iter__())
        self.listing.set()
        assert self.resume.wait(10)
        return iter(items)


def waiting_in_take_or_done(thread: threading.Thread) -> bool:
    frame = sys._current_frames().get(thread.ident or -1)
    while frame is not None and frame.f_code.co_name != "take":
        frame = frame.f_back
    return not thread.is_alive() or frame is not None


def test_a_handle_taken_while_the_pool_closes_is_not_closed_under_its_user() -> None:
    handles = Handles(2, connect_timeout=1.0, read_timeout=1.0, ca_file=certifi.where())
    handles.give_back(handles.take())
    idle = PausedListing(list(handles._idle))
    handles._idle = idle
    closing = threading.Thread(target=handles.close)
    closing.start()
    assert idle.listing.wait(10)  # close() has listed the idle handle and not yet emptied
    taken: list[tuple[int, Handle]] = []
    taker = threading.Thread(target=lambda: taken.append(handles.take()))
    taker.start()
    give_up = time.monotonic() + 10
    while not waiting_in_take_or_done(taker):  # until it is inside take(): blocked, or done
        assert time.monotonic() < give_up
    idle.resume.set()
    closing.join(10)
    taker.join(10)
    [(_, handle)] = taken
    handle.curl.setopt(pycurl.URL, "http://127.0.0.1/")  # raises on a closed handle
    handles.give_back(taken[0])
    handles.close()
