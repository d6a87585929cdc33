"""`publisher_for`: the publisher the configuration names, built with its timeouts.

Each publisher is a module of its own with a `from_config(config, options)` function that
reads its settings and builds it; `REGISTRY` names the module (imported only when chosen, so
an SDK is needed only where its publisher runs) and the extra that brings its SDK. Adding a
publisher is its module plus one line here, and its settings class (docs/development.md).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import cast

from firestore_outbox.errors import ConfigError
from firestore_outbox.observability.logs import configured_secrets
from firestore_outbox.publishers.base import Publisher, PublisherOptions
from firestore_outbox.relay.config import RelayConfig
from firestore_outbox.signing import Signer


@dataclass(frozen=True)
class Entry:
    """Where a publisher's `from_config` lives, and what to install when it cannot load."""

    module: str
    package: str | None = None  # the SDK it imports; None: the standard library only
    extra: str | None = None  # `pip install 'firestore-outbox[extra]'` installs `package`


REGISTRY: dict[str, Entry] = {
    "http": Entry("firestore_outbox.publishers.http.publisher"),
    "fc": Entry("firestore_outbox.publishers.fc.fc2", "aliyun-fc2", "fc"),
    "fc3": Entry("firestore_outbox.publishers.fc.fc3"),
    "mns": Entry("firestore_outbox.publishers.mns.publisher"),
    "eventbridge": Entry(
        "firestore_outbox.publishers.eventbridge", "alibabacloud-eventbridge", "eventbridge"
    ),
    "rocketmq": Entry(
        "firestore_outbox.publishers.rocketmq.publisher", "rocketmq-python-client", "rocketmq"
    ),
    "amqp": Entry("firestore_outbox.publishers.amqp.publisher", "pika", "amqp"),
}


def publisher_for(config: RelayConfig) -> Publisher:
    """The publisher `config.publisher` names, with the configured timeouts and pool."""
    name = config.publisher
    entry = REGISTRY[name]
    try:
        module = importlib.import_module(entry.module)
    except ImportError as exc:
        if entry.package is None:  # nothing to install: a bug, not a deployment's choice
            raise
        raise ConfigError(
            f"RELAY_PUBLISHER={name} needs {entry.package}: "
            f"pip install 'firestore-outbox[{entry.extra}]' ({exc})"
        ) from None
    except OSError as exc:  # the RocketMQ client writes a log folder on import (rocketmq_client)
        raise ConfigError(
            f"RELAY_PUBLISHER={name}: its client cannot write its log folder in the temporary "
            f"directory; point TMPDIR at a writable directory ({exc.strerror})"
        ) from None
    return cast(Publisher, module.from_config(config, options(config)))


def options(config: RelayConfig) -> PublisherOptions:
    """What every publisher is built with: its timeouts, pool, signer and secrets to mask."""
    signer = Signer(config.signing_secrets) if config.signing_secrets else None
    return {
        "connect_timeout": config.connect_timeout_seconds,
        "read_timeout": config.http_timeout_seconds,
        "pool_size": config.concurrency,
        "signer": signer,
        # A downstream may echo anything back in an error body, and errors become
        # `lastError`: every secret this process knows is masked there, as in the logs.
        "secrets": [*configured_secrets(), *config.signing_secrets],
    }
