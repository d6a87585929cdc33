"""`HttpPublisher`: one POST per event over a pooled keep-alive `requests` session."""

from __future__ import annotations

import logging
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

logger = logging.getLogger(__name__)

USER_AGENT = "firestore-outbox-relay/0.1"


class HttpPublisher:
    """POSTs each event to `url` in CloudEvents binary mode and classifies the answer.

    `connect_timeout` bounds the TCP/TLS set-up and `read_timeout` each wait for the answer.
    The URL may carry a token in its path, query or user info: those parts never reach an
    error message.
    """

    def __init__(
        self,
        url: str,
        *,
        connect_timeout: float,
        read_timeout: float,
        pool_size: int = 16,
        session: requests.Session | None = None,
    ) -> None:
        self._url = url
        self._timeout = (connect_timeout, read_timeout)
        self._session = session or requests.Session()
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=pool_size, max_retries=0)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        self._secrets = _url_secrets(url)

    def publish(self, delivery: Delivery) -> PublishResult:
        headers = {"User-Agent": USER_AGENT, **cloudevent_headers(delivery)}
        try:
            response = self._session.post(
                self._url,
                data=delivery.body,
                headers=headers,
                timeout=self._timeout,
                allow_redirects=False,
            )
        except requests.Timeout as exc:
            return self._failure(Outcome.RETRY, f"timeout: {type(exc).__name__}: {exc}")
        except requests.RequestException as exc:
            return self._failure(Outcome.RETRY, f"{type(exc).__name__}: {exc}")
        with response:
            outcome = classify_status(response.status_code)
            if outcome is Outcome.DELIVERED:
                return PublishResult.delivered()
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


def _url_secrets(url: str) -> list[str]:
    """The spellings of `url`'s credential-bearing parts that error messages may contain:
    urllib3 names the request target (path and query), requests sometimes the whole URL."""
    parts = urlsplit(url)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    userinfo = parts.netloc.rpartition("@")[0]
    secrets = [url, target if len(target) > 1 else "", f"{userinfo}@" if userinfo else ""]
    return [s for s in secrets if s]
