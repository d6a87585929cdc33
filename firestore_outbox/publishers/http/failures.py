"""Whose fault a failed POST is, from the urllib3 exception it raised (both of the
transport's paths raise urllib3's: `firestore_outbox.publishers.http.connections` translates its
own)."""

from __future__ import annotations

import urllib3

from firestore_outbox.publishers.base import Outcome


def name(exc: BaseException) -> str:
    """`Class: message` of an exception, as errors quote it."""
    return f"{type(exc).__name__}: {exc}"


def unresolved(exc: BaseException | None) -> BaseException | None:
    """The failed name lookup behind `exc`, of the downstream's name or the proxy's."""
    while exc is not None and not isinstance(exc, urllib3.exceptions.NameResolutionError):
        exc = getattr(exc, "original_error", None) or exc.__cause__
    return exc


def describe(exc: BaseException) -> tuple[Outcome, str]:
    """Failures before a connection exists (DNS, refused, TLS, proxy, connect timeout) are
    the channel's: nothing reached the downstream. Timeouts and resets after connecting may
    have reached it and may pass: they are retried."""
    errors = urllib3.exceptions
    if isinstance(exc, errors.NewConnectionError):  # refused, unresolved: before connect
        return Outcome.CHANNEL, f"ConnectionError: {exc}"
    if isinstance(exc, errors.ConnectTimeoutError):
        return Outcome.CHANNEL, f"timeout: ConnectTimeout: {exc}"
    if isinstance(exc, (errors.SSLError, errors.ProxyError)):
        return Outcome.CHANNEL, f"ConnectionError: {name(exc)}"
    if isinstance(exc, errors.ReadTimeoutError):
        return Outcome.RETRY, f"timeout: ReadTimeout: {exc}"
    if isinstance(exc, errors.ProtocolError):
        return Outcome.RETRY, f"ConnectionError: {name(exc)}"
    return Outcome.RETRY, name(exc)
