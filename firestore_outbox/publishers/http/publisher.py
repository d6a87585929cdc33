"""HTTP delivery: `HttpPublisher`, CloudEvents over the pooled transport
(`firestore_outbox.publishers.http.transport`, re-exported here)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from firestore_outbox._version import VERSION
from firestore_outbox.publishers.base import (
    Delivery,
    PublisherOptions,
    PublishResult,
    cloudevent_attributes,
    cloudevent_headers,
)
from firestore_outbox.publishers.http.answers import MAX_ANSWER_BYTES
from firestore_outbox.publishers.http.transport import HttpTransport
from firestore_outbox.publishers.http.urls import split_credentials, url_secrets

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from firestore_outbox.publishers.http.settings import HttpSettings

__all__ = ["MAX_ANSWER_BYTES", "HttpPublisher", "HttpTransport", "url_secrets"]

USER_AGENT = f"firestore-outbox-relay/{VERSION}"


class HttpPublisher:
    """POSTs each event to `url` in CloudEvents binary mode, signed by `signer` when given.

    The URL may carry a token in its path or query: those parts, in every spelling, and every
    string in `secrets`, never reach an error message. User info in the URL
    (`https://user:password@host/...`) is sent as HTTP Basic authentication, never in the
    request line."""

    def __init__(self, url: str, **options: Unpack[PublisherOptions]) -> None:
        self._url, self._authorization = split_credentials(url)
        self._signer = options.get("signer")
        self._transport = HttpTransport.for_publisher(url_secrets(url), options)

    def publish(self, delivery: Delivery) -> PublishResult:
        headers = {"User-Agent": USER_AGENT, **cloudevent_headers(delivery)}
        if self._authorization:
            headers["Authorization"] = self._authorization
        if self._signer is not None:  # signs the attribute values, not their header forms
            signature = self._signer.sign(cloudevent_attributes(delivery), delivery.body)
            headers.update(signature.headers())
        return self._transport.post(self._url, delivery.body, headers, deadline=delivery.deadline)

    def close(self) -> None:
        """Close the pooled connections."""
        self._transport.close()


def from_settings(settings: HttpSettings, options: PublisherOptions) -> HttpPublisher:
    """`RELAY_PUBLISHER=http`: POST to `DOWNSTREAM_SERVICE_URL`
    (`firestore_outbox.publishers.registry`)."""
    return HttpPublisher(settings.url, **options)
