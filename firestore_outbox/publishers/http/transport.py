"""`HttpTransport`: POSTs over pooled keep-alive connections, every outcome a `PublishResult`
(`HttpPublisher` and the cloud API publishers send through it)."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

import certifi
import urllib3

from firestore_outbox.masking import masker
from firestore_outbox.publishers.base import (
    Outcome,
    PublisherOptions,
    PublishResult,
    bounded_error,
    check_options,
    classify_status,
    parse_retry_after,
)
from firestore_outbox.publishers.http.answers import Answer, read_answer
from firestore_outbox.publishers.http.connections import DirectPool
from firestore_outbox.publishers.http.failures import describe, name, unresolved
from firestore_outbox.publishers.http.wire import POOL_CLASSES, attempt_deadline

_MAX_POOLED_URLS = 8


class HttpTransport:
    """POSTs over a urllib3 connection pool (keep-alive, `pool_size` connections per host, no
    redirects, no retries of its own) and turns every outcome into a `PublishResult`.

    urllib3 rather than `requests`: per POST `requests` spent about 0.8 ms of CPU on session
    bookkeeping (environment, cookies, hooks) against 0.3 ms here, and at the relay's rates
    that CPU, not the network, was the limit. Like `requests` it verifies TLS against
    certifi's bundle and goes through the proxy `HTTP(S)_PROXY` names unless `NO_PROXY`
    exempts the host. Each attempt ends by its deadline: the earlier of the one it is given
    and `connect_timeout + read_timeout` from its start, enforced on every connect, send and
    read (`firestore_outbox.publishers.http.wire`); `read_timeout` also bounds each wait for bytes.
    At most `MAX_ANSWER_BYTES` of an answer are read. Every spelling of each string in `secrets` is
    replaced by `***` in error messages.
    """

    def __init__(
        self,
        *,
        connect_timeout: float,
        read_timeout: float,
        pool_size: int = 16,
        secrets: Iterable[str] = (),
    ) -> None:
        self._bound = connect_timeout + read_timeout
        self._options: dict[str, Any] = {
            "maxsize": pool_size,
            "retries": False,
            "timeout": urllib3.Timeout(connect=connect_timeout, read=read_timeout),
            "ca_certs": certifi.where(),
        }
        self._direct = self._pooled(urllib3.PoolManager(**self._options))
        self._proxied: dict[str, urllib3.ProxyManager] = {}
        self._managers: dict[tuple[str, str], urllib3.PoolManager] = {}
        self._pools: dict[str, DirectPool] = {}
        self._timeouts = (connect_timeout, read_timeout)
        self._opening = threading.Lock()
        self._mask = masker(secrets)

    @classmethod
    def for_publisher(cls, masked: Iterable[str], options: PublisherOptions) -> HttpTransport:
        """The transport a publisher built with `options` sends over: `masked` (its target's
        own secrets) and `options["secrets"]` never reach an error."""
        check_options(options)
        return cls(
            connect_timeout=options["connect_timeout"],
            read_timeout=options["read_timeout"],
            pool_size=options.get("pool_size", 16),
            secrets=[*masked, *options.get("secrets", ())],
        )

    def post(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str],
        *,
        deadline: float | None = None,
        outcome_of: Callable[[Answer], Outcome] | None = None,
    ) -> PublishResult:
        """POST and classify: by status code, or by `outcome_of(answer)` when given."""
        answer = self.exchange(url, body, headers, deadline=deadline)
        if isinstance(answer, PublishResult):
            return answer
        outcome = (outcome_of or _by_status)(answer)
        if outcome is Outcome.DELIVERED:
            return PublishResult.delivered()
        return self.refusal(outcome, answer)

    def exchange(
        self, url: str, body: bytes, headers: dict[str, str], *, deadline: float | None = None
    ) -> Answer | PublishResult:
        """POST and hand back the answer whatever its status, or, when none came, the
        failure as a result (`post` classifies it; a batch target reads it entry by entry)."""
        bound = time.monotonic() + self._bound
        deadline = bound if deadline is None else min(deadline, bound)
        try:
            with attempt_deadline(deadline):
                answer = self._send(url, body, headers)
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            lookup = unresolved(exc)
            if lookup is not None:  # in time or not, nothing reached the downstream
                return self.failure(Outcome.CHANNEL, f"ConnectionError: DNS: {lookup}")
            if time.monotonic() >= deadline:  # whatever broke, the deadline is why
                return self.failure(Outcome.RETRY, f"timeout: deadline: {name(exc)}")
            return self.failure(*describe(exc))
        return answer

    def refusal(self, outcome: Outcome, answer: Answer) -> PublishResult:
        """`outcome` for `answer`, its status and excerpt as the (masked) error."""
        retry_after = parse_retry_after(answer.headers.get("Retry-After"))
        error = f"HTTP {answer.status}" + (f": {answer.excerpt}" if answer.excerpt else "")
        return self.failure(outcome, error, retry_after)

    def close(self) -> None:
        """Close every pooled connection."""
        with self._opening:
            for pool in self._pools.values():
                pool.close()
            self._pools.clear()
        self._direct.clear()
        for manager in self._proxied.values():
            manager.clear()

    def _send(self, url: str, body: bytes, headers: dict[str, str]) -> Answer:
        """POST and read the answer. A URL no proxy stands in front of goes over its own
        `DirectPool` (`firestore_outbox.publishers.http.connections` says why); a proxied one
        through urllib3's `ProxyManager`, which adds the proxy's headers."""
        direct = self._pools.get(url)
        if direct is None or direct.closed:  # unknown, or closed by `close()`
            direct = self._direct_pool(url)
        if direct is not None:
            return direct.post(body, headers)
        response = self._manager(url).request(
            "POST", url, body=body, headers=headers, redirect=False,
            preload_content=False, decode_content=False,
        )  # fmt: skip
        return read_answer(response)

    def _direct_pool(self, url: str) -> DirectPool | None:
        if self._manager(url) is not self._direct:
            return None
        with self._opening:  # one pool per URL, whichever publishing thread comes first
            pool = self._pools.get(url)
            if pool is None or pool.closed:
                if len(self._pools) >= _MAX_POOLED_URLS:  # a publisher has one URL or a few
                    for stale in self._pools.values():
                        stale.close()
                    self._pools.clear()
                pool = self._pools[url] = DirectPool(
                    url,
                    connect_timeout=self._timeouts[0],
                    read_timeout=self._timeouts[1],
                    maxsize=self._options["maxsize"],
                    ca_certs=self._options["ca_certs"],
                )
            return pool

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
                    self._pooled(self._proxied[proxy])
                manager = self._proxied[proxy]
            self._managers[key] = manager
        return manager

    @staticmethod
    def _pooled(manager: urllib3.PoolManager) -> urllib3.PoolManager:
        manager.pool_classes_by_scheme = POOL_CLASSES  # deadline and interim answers
        return manager

    def failure(
        self, outcome: Outcome, error: str, retry_after: float | None = None
    ) -> PublishResult:
        """`outcome` with `error` bounded and every secret masked."""
        return PublishResult(outcome, bounded_error(error, self._mask), retry_after)


def _by_status(answer: Answer) -> Outcome:
    return classify_status(answer.status)
