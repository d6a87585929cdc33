"""Where a job sends: the relay's configured publisher, or a URL named for the job.

The job document stores its target (`{"publisher": "configured"}` or `{"publisher": "http",
"url": ...}`), so a URL that carries a credential (user info, a query) is refused: it would be
stored in Firestore. An authenticated target is the configured publisher. Either way the
publisher is built by the relay's registry with the relay's options (timeouts, the signer,
the secrets to mask), so a replay is signed as every delivery is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from firestore_outbox.errors import InvalidInput
from firestore_outbox.publishers.http.settings import HttpSettings
from firestore_outbox.publishers.http.urls import url_problem
from firestore_outbox.publishers.registry import publisher_for

if TYPE_CHECKING:
    from firestore_outbox.publishers.base import Publisher
    from firestore_outbox.publishers.settings import PublisherSettings
    from firestore_outbox.relay.config import RelayConfig

CONFIGURED = {"publisher": "configured"}


def target_for(url: str | None) -> dict[str, str]:
    """The target of a job: `url` checked, or the configured publisher when None."""
    if url is None:
        return dict(CONFIGURED)
    problem = url_problem(url)
    if problem:
        raise InvalidInput(f"target url must be a usable http:// or https:// URL: {problem}")
    parts = urlsplit(url)
    if parts.username or parts.password or parts.query or parts.fragment:
        raise InvalidInput(
            "target url must carry no user info, query or fragment: the job document stores "
            "it; send to an authenticated target through the configured publisher"
        )
    return {"publisher": HttpSettings.name, "url": url}


def describe(target: Mapping[str, Any]) -> str:
    """The target for a listing: `configured` or the URL's scheme, host and port."""
    if target.get("publisher") != HttpSettings.name:
        return "configured"
    parts = urlsplit(str(target.get("url", "")))
    return f"{parts.scheme}://{parts.netloc}"


def settings_for(target: Mapping[str, Any], config: RelayConfig) -> PublisherSettings:
    if target.get("publisher") == HttpSettings.name:
        return HttpSettings(url=str(target.get("url", "")))
    return config.publisher


def publisher_for_target(target: Mapping[str, Any], config: RelayConfig) -> Publisher:
    """The job's publisher, built with the relay's options."""
    return publisher_for(settings_for(target, config), config.publisher_options())
