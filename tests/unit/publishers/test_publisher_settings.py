"""Each publisher's settings class: it reads only its own variables, checks itself when made,
and is all its publisher is built from (`RelayConfig.publisher` holds one; nothing inherits
another component's fields)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect

import pytest

from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.registry import PUBLISHERS, REGISTRY
from firestore_outbox.publishers.settings import PublisherSettings
from firestore_outbox.relay.config import RelayConfig

# The variables each publisher reads besides the AccessKey's.
PREFIXES = {
    "http": ("DOWNSTREAM_SERVICE_URL",),
    "fc": ("RELAY_FC_",),
    "fc3": ("RELAY_FC_",),
    "mns": ("RELAY_MNS_",),
    "eventbridge": ("RELAY_EVENTBRIDGE_",),
    "rocketmq": ("RELAY_ROCKETMQ_",),
    "amqp": ("RELAY_AMQP_",),
    "kafka": ("RELAY_KAFKA_",),
}


@pytest.mark.parametrize("name", PUBLISHERS)
def test_a_publisher_reads_only_its_own_variables_and_names_the_missing_one(name: str) -> None:
    asked: list[str] = []

    def get(variable: str) -> None:
        asked.append(variable)

    with pytest.raises(ConfigError, match=r"^(DOWNSTREAM_SERVICE_URL|RELAY_[A-Z]+_[A-Z_]+) "):
        REGISTRY[name].settings.from_environment(get)
    allowed = (*PREFIXES[name], "ALIBABA_CLOUD_")
    assert asked and all(variable.startswith(allowed) for variable in asked), asked


@pytest.mark.parametrize("name", PUBLISHERS)
def test_a_publisher_is_built_from_its_own_settings_alone(name: str) -> None:
    entry = REGISTRY[name]
    assert entry.settings.name == name
    try:
        module = importlib.import_module(entry.module)
    except ImportError:
        pytest.skip(f"{entry.package} is not installed")
    # Its one settings parameter is annotated with its own class (a string: postponed).
    first = next(iter(inspect.signature(module.from_settings).parameters.values()))
    assert first.annotation == entry.settings.__name__


def test_relay_config_holds_its_components_and_inherits_none() -> None:
    assert RelayConfig.__bases__ == (object,)
    names = {f.name for f in dataclasses.fields(RelayConfig)}
    assert {"publisher", "partitions", "fan_out", "ramp"} <= names
    # No publisher's field is one of the relay's own.
    for entry in REGISTRY.values():
        assert not {f.name for f in dataclasses.fields(entry.settings)} & (names - {"publisher"})


def test_a_relay_config_refuses_a_publisher_name_for_its_settings() -> None:
    with pytest.raises(ConfigError, match="must be a publisher's settings"):
        RelayConfig(publisher="http")  # type: ignore[arg-type]


def test_settings_classes_are_keyword_only_and_frozen() -> None:
    for entry in REGISTRY.values():
        assert issubclass(entry.settings, PublisherSettings)
        params = dataclasses.fields(entry.settings)
        assert all(f.kw_only for f in params), entry.settings
        assert entry.settings.__dataclass_params__.frozen  # type: ignore[attr-defined]
