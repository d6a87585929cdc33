"""Each publisher family's settings class: its fields are `RelayConfig`'s, read from its own
variables, and its check is the one `RELAY_PUBLISHER` selects."""

from __future__ import annotations

import dataclasses

import pytest

from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.amqp.settings import AmqpSettings, read_amqp
from firestore_outbox.publishers.fc.settings import FcSettings, read_fc
from firestore_outbox.publishers.http.settings import HttpSettings, read_http
from firestore_outbox.publishers.message_settings import (
    EventBridgeSettings,
    MnsSettings,
    RocketMqSettings,
    read_message_services,
)
from firestore_outbox.publishers.settings import AccessKeySettings, read_access_key
from firestore_outbox.relay.config import PUBLISHERS, RelayConfig

FAMILIES = (
    (HttpSettings, read_http),
    (FcSettings, read_fc),
    (AmqpSettings, read_amqp),
)


def _names(cls: type) -> set[str]:
    return {f.name for f in dataclasses.fields(cls)}


@pytest.mark.parametrize(("settings", "read"), FAMILIES)
def test_a_family_reads_exactly_its_own_fields(settings: type, read: object) -> None:
    read_fields = set(read(lambda _variable: None))  # type: ignore[operator]
    assert read_fields == _names(settings) - _names(AccessKeySettings)


def test_the_access_key_is_read_once_for_every_family_that_signs_with_it() -> None:
    assert set(read_access_key(lambda _variable: None)) == _names(AccessKeySettings)


def test_the_message_services_read_their_three_families_fields() -> None:
    families = _names(MnsSettings) | _names(EventBridgeSettings) | _names(RocketMqSettings)
    read_fields = set(read_message_services(lambda _variable: None))
    assert read_fields == families - _names(AccessKeySettings)


def test_relay_config_has_every_family_field_under_its_own_name() -> None:
    for settings in (HttpSettings, FcSettings, MnsSettings, EventBridgeSettings):
        assert _names(settings) <= _names(RelayConfig)
    assert _names(RocketMqSettings) | _names(AmqpSettings) <= _names(RelayConfig)


@pytest.mark.parametrize("publisher", PUBLISHERS)
def test_each_publisher_is_checked_by_its_family(publisher: str) -> None:
    # Nothing of any publisher's set: each names a variable its family reads.
    with pytest.raises(ConfigError, match=r"^(DOWNSTREAM_SERVICE_URL|RELAY_[A-Z]+_[A-Z]+) "):
        RelayConfig(publisher=publisher)
