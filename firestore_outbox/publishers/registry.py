"""`publisher_for`: the publisher a settings object names, built with its options.

Each publisher is a module of its own with a `from_settings(settings, options)` function that
builds it from its own settings class alone; `REGISTRY` names, by `RELAY_PUBLISHER` value, the
settings class (which imports no SDK), the module (imported only when chosen, so an SDK is
needed only where its publisher runs) and the extra that brings its SDK. Adding a publisher is
its module and settings class plus one line here (docs/development.md).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import cast

from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.amqp.settings import AmqpSettings
from firestore_outbox.publishers.base import Publisher, PublisherOptions, bounded_error
from firestore_outbox.publishers.eventbridge.settings import EventBridgeSettings
from firestore_outbox.publishers.fc.settings import Fc3Settings, FcSettings
from firestore_outbox.publishers.http.settings import HttpSettings
from firestore_outbox.publishers.kafka.settings import KafkaSettings
from firestore_outbox.publishers.mns.settings import MnsSettings
from firestore_outbox.publishers.rocketmq.settings import RocketMqSettings
from firestore_outbox.publishers.settings import PublisherSettings


@dataclass(frozen=True)
class Entry:
    """A publisher's settings class, where its `from_settings` lives, and what to install
    when it cannot load."""

    settings: type[PublisherSettings]
    module: str
    package: str | None = None  # the SDK it imports; None: the standard library only
    extra: str | None = None  # `pip install 'firestore-outbox[extra]'` installs `package`


_ENTRIES = (
    Entry(HttpSettings, "firestore_outbox.publishers.http.publisher"),
    Entry(FcSettings, "firestore_outbox.publishers.fc.fc2", "aliyun-fc2", "fc"),
    Entry(Fc3Settings, "firestore_outbox.publishers.fc.fc3"),
    Entry(AmqpSettings, "firestore_outbox.publishers.amqp.publisher", "pika", "amqp"),
    Entry(MnsSettings, "firestore_outbox.publishers.mns.publisher"),
    Entry(
        EventBridgeSettings,
        "firestore_outbox.publishers.eventbridge.publisher",
        "alibabacloud-eventbridge",
        "eventbridge",
    ),
    Entry(
        RocketMqSettings,
        "firestore_outbox.publishers.rocketmq.publisher",
        "rocketmq-python-client",
        "rocketmq",
    ),
    Entry(KafkaSettings, "firestore_outbox.publishers.kafka.publisher", "confluent-kafka", "kafka"),
)
REGISTRY: dict[str, Entry] = {entry.settings.name: entry for entry in _ENTRIES}
PUBLISHERS = tuple(REGISTRY)


def publisher_for(settings: PublisherSettings, options: PublisherOptions) -> Publisher:
    """The publisher `settings` are for, built from them and `options` (its timeouts, pool,
    signer and secrets to mask: `RelayConfig.publisher_options()`). A publisher that cannot be
    built (its SDK refuses its settings) is a `ConfigError`, raised before any event is read:
    never an event's attempt."""
    name = settings.name
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
    try:
        return cast(Publisher, module.from_settings(settings, options))
    except (ConfigError, TypeError):  # TypeError: an option misspelled by the caller, a bug
        raise
    except Exception as exc:  # an SDK refusing its settings: before any event is read
        secrets = [*settings.secrets(), *options.get("secrets", ())]
        error = bounded_error(f"{type(exc).__name__}: {exc}", secrets)
        raise ConfigError(
            f"RELAY_PUBLISHER={name}: the publisher cannot be built from its settings: {error}"
        ) from exc
