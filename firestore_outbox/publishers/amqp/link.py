"""`Link`: one AMQP 0-9-1 connection with a confirm-mode channel, every wait bounded.

pika's `BlockingConnection` waits for a publisher confirm without any timeout, and nothing in
its public API bounds that wait. A `Link` drives a `SelectConnection` (pika's asynchronous
connection, public API only) on the calling thread instead: each wait polls its own I/O loop
until the awaited callback fired or the caller's deadline passed. pika connections are not
thread-safe, so a link is used by one thread at a time (`firestore_outbox.publishers.amqp.publisher`
pools them); it holds no thread of its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pika
from pika.adapters.select_connection import IOLoop
from pika.channel import Channel
from pika.spec import Basic, BasicProperties

# How long closing a link may take: a broker that stalls is not waited for.
CLOSE_SECONDS = 1.0


class LinkTimeout(Exception):
    """The deadline passed before the broker answered."""


class LinkClosed(Exception):
    """The connection or channel is closed: `reply_code` is the broker's reason (AMQP 0-9-1
    reply codes: 404 no such exchange, 403 access refused, 406 precondition failed, 320
    connection forced, ...), 0 when the connection was lost or never opened."""

    def __init__(self, reason: str, reply_code: int = 0, *, opened: bool = True) -> None:
        super().__init__(reason)
        self.reply_code = reply_code
        self.opened = opened  # False: the connection never opened (refused, DNS, login)


@dataclass(frozen=True)
class Confirm:
    """The broker's answer to one publish: acked or nacked, and returned when unroutable."""

    acked: bool
    returned: str | None = None  # "<reply code> <reply text>" of a Basic.Return


class Link:
    """Opens a connection and a confirm channel by `deadline` (`time.monotonic()`), or raises
    `LinkClosed(opened=False)` (refused, unreachable, login refused, no answer in time)."""

    def __init__(self, parameters: pika.ConnectionParameters, deadline: float) -> None:
        self._loop = IOLoop()
        self._loop.activate_poller()  # what `start()` would do; we poll ourselves
        self._channel: Channel | None = None
        self._ready = False
        self._closed: LinkClosed | None = None
        self._tag = 0  # delivery tag of the last publish on the channel
        self._confirm: Confirm | None = None
        self._returned: str | None = None
        self.last_used = time.monotonic()
        self._connection = pika.SelectConnection(
            parameters,
            on_open_callback=self._on_open,
            on_open_error_callback=self._on_open_error,
            on_close_callback=self._on_close,
            custom_ioloop=self._loop,
        )
        try:
            self._wait(lambda: self._ready, deadline)
        except LinkTimeout:
            # Nothing was published on it: like a refused connection, the channel's fault.
            self.close(deadline)
            raise LinkClosed("timeout: no AMQP connection by the deadline", opened=False) from None
        except BaseException:
            self.close(deadline)
            raise

    @property
    def usable(self) -> bool:
        """Open, as far as the bytes already received tell (read without waiting)."""
        if self._closed is None:
            self._loop.call_later(0, _nothing)  # a due timer: the poll below does not block
            self._loop.poll()
            self._loop.process_timeouts()
        return self._closed is None

    def publish(
        self,
        exchange: str,
        routing_key: str,
        body: bytes,
        properties: BasicProperties,
        deadline: float,
    ) -> Confirm:
        """Publish with `mandatory` and wait for the broker's confirm until `deadline`."""
        if self._closed is not None:
            raise self._closed
        assert self._channel is not None
        self._confirm, self._returned = None, None
        self._channel.basic_publish(exchange, routing_key, body, properties, mandatory=True)
        self._tag += 1
        self.last_used = time.monotonic()
        self._wait(lambda: self._confirm is not None, deadline)
        assert self._confirm is not None
        return self._confirm

    def close(self, deadline: float | None = None) -> None:
        """Close the connection, waiting for the broker at most `CLOSE_SECONDS` and never past
        `deadline`, and the I/O loop. (A socket not closed by then is closed when collected.)"""
        connection = self._connection
        until = time.monotonic() + CLOSE_SECONDS
        until = until if deadline is None else min(until, deadline)
        try:
            if not (connection.is_closing or connection.is_closed):
                connection.close()  # while still opening: drops the socket at once
            self._drive(lambda: connection.is_closed, until)
        except pika.exceptions.AMQPError:
            pass  # closed, or left to the socket's finalizer
        finally:
            self._loop.close()

    def _wait(self, done: Callable[[], bool], deadline: float) -> None:
        """Drive the I/O loop until `done()`; raise `LinkClosed` or `LinkTimeout` if not."""
        self._drive(lambda: done() or self._closed is not None, deadline)
        if not done():
            if self._closed is not None:
                raise self._closed
            raise LinkTimeout("no answer from the broker by the attempt's deadline")

    def _drive(self, done: Callable[[], bool], deadline: float) -> None:
        # A timer due at the deadline, so that `poll()` (which sleeps until the next timer
        # or I/O) wakes by then even when the broker sends nothing.
        timer = self._loop.call_later(max(0.0, deadline - time.monotonic()), _nothing)
        try:
            while not done() and time.monotonic() < deadline:
                self._loop.poll()
                self._loop.process_timeouts()
        finally:
            self._loop.remove_timeout(timer)

    # Callbacks, run inside `poll()` / `process_timeouts()` on the caller's thread.

    def _on_open(self, connection: pika.SelectConnection) -> None:
        connection.channel(on_open_callback=self._on_channel)

    def _on_channel(self, channel: Channel) -> None:
        self._channel = channel
        channel.add_on_close_callback(self._on_channel_close)
        channel.add_on_return_callback(self._on_return)
        channel.confirm_delivery(self._on_confirm, callback=self._on_select_ok)

    def _on_select_ok(self, _frame: Any) -> None:
        self._ready = True

    def _on_open_error(self, _connection: Any, error: BaseException | str) -> None:
        self._closed = LinkClosed(_describe(error), opened=False)

    def _on_close(self, _connection: Any, reason: BaseException) -> None:
        if self._closed is None:
            self._closed = LinkClosed(_describe(reason), _reply_code(reason))

    def _on_channel_close(self, _channel: Channel, reason: BaseException) -> None:
        if self._closed is None:
            self._closed = LinkClosed(_describe(reason), _reply_code(reason))
        if self._connection.is_open:  # one channel per link: the link is done
            self._connection.close()

    def _on_return(self, _channel: Channel, method: Basic.Return, *_: Any) -> None:
        # A Basic.Return comes before the Basic.Ack of the same message.
        self._returned = f"{method.reply_code} {method.reply_text}"

    def _on_confirm(self, frame: Any) -> None:
        method = frame.method
        # One message in flight per link: a (multiple) confirm reaching its tag answers it.
        if method.delivery_tag >= self._tag:
            acked = isinstance(method, Basic.Ack)
            self._confirm = Confirm(acked, self._returned)


def _nothing() -> None:
    pass


def _reply_code(reason: BaseException) -> int:
    code = getattr(reason, "reply_code", 0)
    return code if isinstance(code, int) else 0


def _describe(error: BaseException | str) -> str:
    if isinstance(error, str):
        return error
    return f"{type(error).__name__}: {error}"
