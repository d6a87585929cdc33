"""Looking a name up within an attempt's deadline (for the HTTP transport's routes and the
AMQP publisher's broker address).

`socket.getaddrinfo` cannot be interrupted or given a timeout: a resolver that hangs holds
its caller as long as the system's resolver settings say (seconds to minutes), past the
attempt's deadline, the Function Compute budget and the event's lease. So a name is looked up
on a small shared pool of threads and waited for at most the time left; a lookup that runs
out of time fails like a name that does not resolve (`ResolutionTimeout` is a
`socket.gaierror`) and its thread finishes the lookup on its own, in the background. The pool
is capped at `WORKERS` threads, and concurrent lookups of one name share one thread, so a
hanging resolver holds at most one thread per name and never more than `WORKERS`; lookups
beyond that wait in the queue, still within their own deadlines. IP literals are never looked
up. Nothing is cached here (the HTTP transport keeps an answer for a minute: `...http.routes`).
"""

from __future__ import annotations

import concurrent.futures
import ipaddress
import socket
import threading
from typing import Any

__all__ = ["WORKERS", "ResolutionTimeout", "is_ip_literal", "resolve"]

WORKERS = 4

AddressInfo = tuple[Any, ...]  # one entry of `socket.getaddrinfo`'s answer
_pool = concurrent.futures.ThreadPoolExecutor(WORKERS, thread_name_prefix="outbox-dns")
_lookups: dict[tuple[str, int, int], concurrent.futures.Future[list[AddressInfo]]] = {}
_lock = threading.Lock()


class ResolutionTimeout(socket.gaierror):
    """The lookup of a name was still unanswered when the attempt's deadline came."""


def resolve(host: str, port: int, family: int, timeout: float | None) -> list[AddressInfo]:
    """`socket.getaddrinfo(host, port, family, SOCK_STREAM)`, waited for at most `timeout` s
    (None: as long as it takes)."""
    if is_ip_literal(host):  # no resolver involved: answered at once, on this thread
        return socket.getaddrinfo(host, port, family, socket.SOCK_STREAM, 0, socket.AI_NUMERICHOST)
    try:
        host.encode("idna")  # as urllib3 checks: what cannot be encoded cannot resolve
    except UnicodeError as exc:
        raise socket.gaierror(socket.EAI_NONAME, f"not a name: {exc}") from None
    key = (host, port, family)
    with _lock:
        lookup = _lookups.get(key)
        started = lookup is None
        if lookup is None:
            lookup = _pool.submit(socket.getaddrinfo, host, port, family, socket.SOCK_STREAM)
            _lookups[key] = lookup
    if started:
        # Outside the lock: a lookup already answered runs the callback at once, on this
        # thread, and `_forget` takes the lock (inside it, that deadlocked the caller).
        lookup.add_done_callback(lambda _: _forget(key, lookup))
    try:
        return lookup.result(None if timeout is None else max(timeout, 0.0))
    except concurrent.futures.TimeoutError:
        raise ResolutionTimeout(
            socket.EAI_AGAIN,
            f"DNS lookup unanswered at the attempt's deadline ({timeout or 0:.2f} s)",
        ) from None


def is_ip_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def _forget(key: tuple[str, int, int], lookup: concurrent.futures.Future[Any]) -> None:
    with _lock:
        if _lookups.get(key) is lookup:
            del _lookups[key]
