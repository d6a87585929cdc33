"""The `amqp` and `fc3` publishers' variables: read, checked, never echoed."""

from __future__ import annotations

import pytest

from firestore_outbox.config.secrets import configured_secrets
from firestore_outbox.config.shortcuts import load_relay_config
from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.amqp.settings import AmqpSettings
from firestore_outbox.publishers.fc.settings import Fc3Settings

AMQP = {
    "RELAY_PUBLISHER": "amqp",
    "RELAY_AMQP_URL": "amqps://relay:s3cret-pa55@broker.example.com:5671/shop",
    "RELAY_AMQP_EXCHANGE": "orders",
    "RELAY_AMQP_ROUTING_KEY": "order.created",
}
FC3 = {
    "RELAY_PUBLISHER": "fc3",
    "RELAY_FC_ENDPOINT": "https://1234567890123456.cn-hangzhou.fc.aliyuncs.com",
    "RELAY_FC_FUNCTION": "on-order-created",
    "ALIBABA_CLOUD_ACCESS_KEY_ID": "AKID",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "t0ps3cret",
}


def test_the_amqp_publisher_reads_its_url_exchange_and_routing_key() -> None:
    config = load_relay_config(AMQP)

    assert config.publisher == AmqpSettings(
        url=AMQP["RELAY_AMQP_URL"], exchange="orders", routing_key="order.created"
    )
    assert "s3cret-pa55" not in repr(config)


def test_without_exchange_and_routing_key_amqp_uses_the_default_exchange_and_event_types() -> None:
    only_url = {k: v for k, v in AMQP.items() if k.startswith(("RELAY_PUBLISHER", "RELAY_AMQP_U"))}
    config = load_relay_config(only_url)

    assert config.publisher == AmqpSettings(
        url=AMQP["RELAY_AMQP_URL"], exchange="", routing_key=None
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"RELAY_AMQP_URL": ""}, "RELAY_AMQP_URL is not set: RELAY_PUBLISHER=amqp needs it"),
        ({"RELAY_AMQP_URL": "https://relay:s3cret-pa55@x/"}, "amqp:// or amqps://.*scheme"),
        ({"RELAY_AMQP_URL": "amqp://relay:s3cret-pa55@:5672/"}, "no host"),
        ({"RELAY_AMQP_URL": "amqp://relay:s3cret-pa55@h:99999/"}, "cannot be parsed"),
        ({"RELAY_AMQP_URL": "amqp://relay:s3cret-pa55@h/ x"}, "spaces or control"),
        ({"RELAY_AMQP_EXCHANGE": "x" * 256}, "RELAY_AMQP_EXCHANGE must be at most 255 bytes"),
        ({"RELAY_AMQP_ROUTING_KEY": "é" * 128}, "RELAY_AMQP_ROUTING_KEY must be at most 255"),
    ],
)
def test_a_bad_amqp_setting_is_named_and_the_url_never_echoed(
    changes: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        load_relay_config({**AMQP, **changes})
    assert "s3cret-pa55" not in str(raised.value)


def test_the_broker_password_is_a_configured_secret_masked_in_logs() -> None:
    assert "s3cret-pa55" in configured_secrets(AMQP)


def test_the_fc3_publisher_needs_an_endpoint_a_function_and_keys_but_no_service() -> None:
    config = load_relay_config(FC3)
    assert isinstance(config.publisher, Fc3Settings)  # which has no service
    assert (config.publisher.name, config.publisher.function) == ("fc3", "on-order-created")
    for variable in ("RELAY_FC_ENDPOINT", "RELAY_FC_FUNCTION", "ALIBABA_CLOUD_ACCESS_KEY_SECRET"):
        with pytest.raises(ConfigError, match=f"{variable} is not set: RELAY_PUBLISHER=fc3"):
            load_relay_config({k: v for k, v in FC3.items() if k != variable})
    assert "t0ps3cret" not in repr(config)


def test_fc3_invokes_asynchronously_only() -> None:
    with pytest.raises(ConfigError, match="RELAY_FC_INVOCATION_TYPE must be async"):
        load_relay_config({**FC3, "RELAY_FC_INVOCATION_TYPE": "sync"})


def test_an_unknown_publisher_lists_the_choices() -> None:
    with pytest.raises(
        ConfigError, match=r"RELAY_PUBLISHER must be one of http, fc, fc3, amqp.*kafka"
    ):
        load_relay_config({**AMQP, "RELAY_PUBLISHER": "nats"})
