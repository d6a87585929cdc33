"""What the publishers that call an Alibaba Cloud API over HTTP share: how they are built.

`AccessKeyTarget` is an endpoint and the AccessKey that signs its requests; `ApiPublisher`
turns a publisher's `PublisherOptions` into the relay's pooled, deadline-bound transport, with
the target's own secrets and the ones it is given masked in every error. A publisher adds
only its wire format: what it sends and how it reads the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict
from urllib.parse import urlsplit

from firestore_outbox.publishers.http.transport import HttpTransport

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from firestore_outbox.publishers.base import PublisherOptions
    from firestore_outbox.publishers.settings import AccessKeySettings


@dataclass(frozen=True, kw_only=True)
class AccessKeyTarget:
    """An Alibaba Cloud endpoint and the credentials that sign the requests to it (with a
    role's temporary credentials, the STS token too)."""

    endpoint: str  # https://ACCOUNT_ID.<service>.REGION.aliyuncs.com
    access_key_id: str
    access_key_secret: str = field(repr=False)
    security_token: str | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        """The endpoint's `host[:port]`, as the `host` header (and most signatures) name it."""
        return urlsplit(self.endpoint).netloc

    def url(self, path: str) -> str:
        """The URL of `path` (already encoded) on the endpoint."""
        return self.endpoint.rstrip("/") + path

    def secrets(self) -> tuple[str, ...]:
        """What must never reach an error: the key secret and the STS token."""
        return (self.access_key_secret, self.security_token or "")


class AccessKey(TypedDict):
    """The credentials part of an `AccessKeyTarget`, as keyword arguments."""

    access_key_id: str
    access_key_secret: str
    security_token: str | None


def access_key(settings: AccessKeySettings) -> AccessKey:
    """The configured AccessKey (`ALIBABA_CLOUD_ACCESS_KEY_ID`, `..._SECRET`,
    `..._SECURITY_TOKEN`) as a target's keyword arguments."""
    return {
        "access_key_id": settings.access_key_id,
        "access_key_secret": settings.access_key_secret,
        "security_token": settings.security_token,
    }


class ApiPublisher:
    """Base of the publishers over `HttpTransport`: keeps the signer and the transport, and
    closes it. A subclass's constructor calls `super().__init__(target.secrets(), **options)`
    and then prepares its own requests."""

    def __init__(self, masked: tuple[str, ...], **options: Unpack[PublisherOptions]) -> None:
        self._signer = options.get("signer")
        self._transport = HttpTransport.for_publisher(masked, options)

    def close(self) -> None:
        """Close the pooled connections."""
        self._transport.close()
