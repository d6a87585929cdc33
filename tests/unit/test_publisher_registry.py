"""The publisher registry and the options every publisher is built with."""

from __future__ import annotations

import importlib

import pytest

from app.relay.config import PUBLISHERS
from app.relay.factory import REGISTRY
from app.relay.http import HttpPublisher
from app.relay.publisher_base import AccessKeyTarget


def test_every_publisher_the_configuration_accepts_has_a_registry_line() -> None:
    assert set(REGISTRY) == set(PUBLISHERS)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_registered_module_builds_its_publisher_from_the_configuration(name: str) -> None:
    module = importlib.import_module(REGISTRY[name].module)
    assert callable(module.from_config)


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
