"""HTTP delivery: a pooled keep-alive transport, and `HttpPublisher` on top of it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter

from app.relay.publishers import (
    Delivery,
    Outcome,
    PublishResult,
    bounded_error,
    classify_status,
    cloudevent_headers,
    parse_retry_after,
)
from app.signing import SIGNATURE_HEADER, Signer

USER_AGENT = "firestore-outbox-relay/0.1"


class HttpTransport:
    """POSTs over one `requests` session (keep-alive, `pool_size` connections, no redirects,
    no retries of its own) and turns every outcome into a `PublishResult`.

    `connect_timeout` bounds the TCP/TLS set-up and `read_timeout` each wait for the answer.
    Every string in `secrets` is replaced by `***` in error messages.
    """

    def __init__(
        self,
        *,
        connect_timeout: float,
        read_timeout: float,
        pool_size: int = 16,
        secrets: Iterable[str] = (),
    ) -> None:
        self._timeout = (connect_timeout, read_timeout)
        self._session = requests.Session()
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=pool_size, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._secrets = [secret for secret in secrets if secret]

    def post(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str],
        *,
        outcome_of: Callable[[requests.Response], Outcome] | None = None,
    ) -> PublishResult:
        """POST and classify: by status code, or by `outcome_of(response)` when given."""
        try:
            response = self._session.post(
                url, data=body, headers=headers, timeout=self._timeout, allow_redirects=False
            )
        except requests.Timeout as exc:
            return self._failure(Outcome.RETRY, f"timeout: {type(exc).__name__}: {exc}")
        except requests.RequestException as exc:
            return self._failure(Outcome.RETRY, f"{type(exc).__name__}: {exc}")
        with response:
            outcome = (outcome_of or _by_status)(response)
            if outcome is Outcome.DELIVERED:
                return PublishResult.delivered()
            # Any body will do, JSON or not: only an excerpt is kept.
            excerpt = response.content[:200].decode("utf-8", "replace").strip()
            retry_after = parse_retry_after(response.headers.get("Retry-After"))
        error = f"HTTP {response.status_code}" + (f": {excerpt}" if excerpt else "")
        return self._failure(outcome, error, retry_after)

    def close(self) -> None:
        self._session.close()

    def _failure(
        self, outcome: Outcome, error: str, retry_after: float | None = None
    ) -> PublishResult:
        return PublishResult(outcome, bounded_error(error, self._secrets), retry_after)


class HttpPublisher:
    """POSTs each event to `url` in CloudEvents binary mode, signed by `signer` when given.
    The URL may carry a token in its path, query or user info: those parts never reach an
    error message."""

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float,
        read_timeout: float,
        pool_size: int = 16,
        signer: Signer | None = None,
    ) -> None:
        self._url = url
        self._signer = signer
        self._transport = HttpTransport(
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            pool_size=pool_size,
            secrets=url_secrets(url),
        )

    def publish(self, delivery: Delivery) -> PublishResult:
        headers = {"User-Agent": USER_AGENT, **cloudevent_headers(delivery)}
        if self._signer is not None:
            headers[SIGNATURE_HEADER] = self._signer.sign(
                delivery.event_id, delivery.source, delivery.body
            )
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


def _by_status(response: requests.Response) -> Outcome:
    return classify_status(response.status_code)
