"""`LinkPool`: the AMQP publisher's connections, at most `size` open, each used by one thread
at a time (pika connections are not thread-safe).

A thread takes an idle link that is still fresh, or opens a new one while fewer than `size`
are open (counted from the moment it starts connecting, so the bound holds meanwhile), or
else waits for one given back, never past its attempt's deadline. A link idle for over
`MAX_IDLE_SECONDS`, found closed, or in an unknown state after a failure is closed and no
longer counted.
"""

from __future__ import annotations

import threading
import time

from firestore_outbox.publishers.amqp.address import parameters_for
from firestore_outbox.publishers.amqp.link import Link, LinkTimeout

# A pooled connection idle this long is replaced: it may have missed the broker's heartbeats
# (only polled while publishing) and the broker may have closed it.
MAX_IDLE_SECONDS = 30.0


class LinkPool:
    """Links to the broker at `url`, connected within `connect_timeout`, at most `size` open."""

    def __init__(self, url: str, connect_timeout: float, size: int) -> None:
        self._url = url
        self._connect_timeout = connect_timeout
        self.size = size
        self.idle: list[Link] = []
        self._open = 0  # links connected or connecting, idle or in use
        self._closed = False
        self._given_back = threading.Condition(threading.Lock())

    def take(self, deadline: float) -> Link:
        """An idle link that is still open, or a new one (connected within the connect
        timeout and `deadline`); `LinkTimeout` if none is free by `deadline`."""
        while True:
            with self._given_back:
                while not self.idle and self._open >= self.size:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise LinkTimeout(f"all {self.size} pooled connections stayed busy")
                    self._given_back.wait(left)
                link = self.idle.pop() if self.idle else None
                if link is None:
                    self._open += 1
            if link is None:
                break
            if time.monotonic() - link.last_used < MAX_IDLE_SECONDS and link.usable:
                return link
            self.drop(link, deadline)
        connected_by = min(deadline, time.monotonic() + self._connect_timeout)
        try:
            return Link(
                parameters_for(self._url, self._connect_timeout, connected_by), connected_by
            )
        except BaseException:
            self._uncount()
            raise

    def give(self, link: Link) -> None:
        """Take `link` back after a publish that left it in a known state."""
        with self._given_back:
            if not self._closed:
                self.idle.append(link)
                self._given_back.notify()
                return
        self.drop(link, None)

    def drop(self, link: Link | None, deadline: float | None) -> None:
        """Close a link whose state is unknown (never reused), within `deadline`."""
        if link is not None:
            link.close(deadline)
            self._uncount()

    def close(self) -> None:
        """Close the idle links; one in use is closed when it is given back."""
        with self._given_back:
            self._closed = True
            idle, self.idle = self.idle, []
        for link in idle:
            self.drop(link, None)

    def _uncount(self) -> None:
        with self._given_back:
            self._open -= 1
            self._given_back.notify()
