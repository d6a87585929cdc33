"""The publisher registry and the options every publisher is built with."""

from __future__ import annotations

import importlib
import sys

import pytest

from firestore_outbox.config.shortcuts import load_relay_config
from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.cloud import AccessKeyTarget
from firestore_outbox.publishers.http.publisher import HttpPublisher
from firestore_outbox.publishers.registry import REGISTRY, publisher_for


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_registered_module_builds_its_publisher_from_its_settings(name: str) -> None:
    module = importlib.import_module(REGISTRY[name].module)
    assert callable(module.from_settings)


def test_a_misspelled_option_is_refused_like_a_keyword_argument() -> None:
    with pytest.raises(TypeError, match="pool_sise"):
        HttpPublisher("http://127.0.0.1:9/", connect_timeout=1, read_timeout=1, pool_sise=2)  # type: ignore[call-arg]


def test_an_access_key_target_names_its_secrets_and_hides_them_from_repr() -> None:
    keys = {"access_key_id": "AKID", "access_key_secret": "s3cret-value"}
    target = AccessKeyTarget(
        endpoint="https://1.fc.cn-x.aliyuncs.com/", security_token="t0ken-value", **keys
    )
    assert target.secrets() == ("s3cret-value", "t0ken-value")
    assert target.host == "1.fc.cn-x.aliyuncs.com"
    assert target.url("/a%20b") == "https://1.fc.cn-x.aliyuncs.com/a%20b"
    assert "s3cret" not in repr(target) and "t0ken" not in repr(target)


def test_a_publisher_whose_sdk_is_missing_names_the_extra_that_installs_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(
        sys.modules, "firestore_outbox.publishers.eventbridge.publisher", raising=False
    )
    monkeypatch.setitem(sys.modules, "alibabacloud_eventbridge_util", None)  # import fails
    monkeypatch.setitem(sys.modules, "alibabacloud_eventbridge_util.client", None)
    config = load_relay_config(
        {
            "RELAY_PUBLISHER": "eventbridge",
            "RELAY_EVENTBRIDGE_ENDPOINT": "https://1.eventbridge.cn-x.aliyuncs.com",
            "RELAY_EVENTBRIDGE_BUS": "orders",
            "ALIBABA_CLOUD_ACCESS_KEY_ID": "AKID",
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "s3cret-value",
        }
    )
    with pytest.raises(ConfigError, match=r"needs alibabacloud-eventbridge: pip install "):
        publisher_for(config.publisher, config.publisher_options())


def test_a_publisher_its_sdk_refuses_to_build_is_a_configuration_error_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Raised before any event is read, the SDK's words kept with every secret masked:
    never an event's attempt (the relay builds its publisher when it is built)."""
    config = load_relay_config(
        {
            "RELAY_PUBLISHER": "amqp",
            "RELAY_AMQP_URL": "amqps://relay:amqp-s3cret@broker.example.com/",
        }
    )
    module = importlib.import_module(REGISTRY["amqp"].module)

    def refuses(*_: object) -> None:
        raise ValueError("bad TLS options for amqps://relay:amqp-s3cret@broker.example.com/")

    monkeypatch.setattr(module, "from_settings", refuses)
    with pytest.raises(ConfigError) as raised:
        publisher_for(config.publisher, config.publisher_options())
    message = str(raised.value)
    assert message.startswith("RELAY_PUBLISHER=amqp: the publisher cannot be built from its ")
    assert "ValueError: bad TLS options" in message and "amqp-s3cret" not in message


def test_a_misspelled_option_stays_a_type_error_through_the_registry() -> None:
    config = load_relay_config({"DOWNSTREAM_SERVICE_URL": "http://127.0.0.1:9/"})
    options = {**config.publisher_options(), "pool_sise": 2}
    with pytest.raises(TypeError, match="pool_sise"):
        publisher_for(config.publisher, options)  # type: ignore[arg-type]
