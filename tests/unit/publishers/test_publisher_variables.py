"""`load_relay_config` for each publisher that is not plain HTTP (fc, mns, eventbridge,
rocketmq): the variables it reads, and what it refuses."""

from __future__ import annotations

import pytest

from firestore_outbox.config.shortcuts import load_relay_config
from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.eventbridge.settings import EventBridgeSettings
from firestore_outbox.publishers.fc.settings import FcSettings
from firestore_outbox.publishers.mns.settings import MnsSettings
from firestore_outbox.publishers.rocketmq.settings import RocketMqSettings
from tests.support.relay_variables import FC


def test_the_fc_publisher_needs_no_url_but_its_target_and_credentials() -> None:
    config = load_relay_config(FC)
    assert isinstance(config.publisher, FcSettings)  # the only publisher settings it holds
    assert (config.publisher.name, config.publisher.invocation_type) == ("fc", "async")
    for variable in FC:
        if variable == "RELAY_PUBLISHER":
            continue
        with pytest.raises(ConfigError, match=f"{variable} is not set"):
            load_relay_config({k: v for k, v in FC.items() if k != variable})
    with pytest.raises(ConfigError, match="RELAY_FC_INVOCATION_TYPE must be async or sync"):
        load_relay_config({**FC, "RELAY_FC_INVOCATION_TYPE": "later"})
    with pytest.raises(ConfigError, match="RELAY_PUBLISHER must be one of http, fc"):
        load_relay_config({**FC, "RELAY_PUBLISHER": "nats"})
    assert "t0ps3cret" not in repr(config)


MNS = {
    "RELAY_PUBLISHER": "mns",
    "RELAY_MNS_ENDPOINT": "https://1.mns.cn-hangzhou.aliyuncs.com",
    "RELAY_MNS_QUEUE": "orders",
    "ALIBABA_CLOUD_ACCESS_KEY_ID": "id",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "secret",
}


def test_mns_reads_its_variables() -> None:
    config = load_relay_config(MNS)
    assert isinstance(config.publisher, MnsSettings)
    assert (config.publisher.queue, config.publisher.topic) == ("orders", None)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"RELAY_MNS_ENDPOINT": ""}, "RELAY_MNS_ENDPOINT is not set"),
        ({"ALIBABA_CLOUD_ACCESS_KEY_SECRET": ""}, "ALIBABA_CLOUD_ACCESS_KEY_SECRET is not set"),
        ({"RELAY_MNS_ENDPOINT": "ftp://x"}, "RELAY_MNS_ENDPOINT must be a usable"),
        ({"RELAY_MNS_QUEUE": ""}, "exactly one of RELAY_MNS_QUEUE and RELAY_MNS_TOPIC"),
        ({"RELAY_MNS_TOPIC": "t"}, "exactly one of RELAY_MNS_QUEUE and RELAY_MNS_TOPIC"),
    ],
)
def test_mns_refuses_what_it_cannot_use(changes: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_relay_config({**MNS, **changes})


EVENTBRIDGE = {
    "RELAY_PUBLISHER": "eventbridge",
    "RELAY_EVENTBRIDGE_ENDPOINT": "https://1.eventbridge.cn-hangzhou.aliyuncs.com",
    "RELAY_EVENTBRIDGE_BUS": "orders-bus",
    "ALIBABA_CLOUD_ACCESS_KEY_ID": "id",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "secret",
}


def test_eventbridge_reads_its_variables() -> None:
    config = load_relay_config(EVENTBRIDGE)
    assert isinstance(config.publisher, EventBridgeSettings)
    assert config.publisher.bus == "orders-bus"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"RELAY_EVENTBRIDGE_BUS": ""}, "RELAY_EVENTBRIDGE_BUS is not set"),
        ({"RELAY_EVENTBRIDGE_ENDPOINT": ""}, "RELAY_EVENTBRIDGE_ENDPOINT is not set"),
        ({"RELAY_EVENTBRIDGE_ENDPOINT": "eventbridge"}, "must be a usable"),
        ({"ALIBABA_CLOUD_ACCESS_KEY_ID": ""}, "ALIBABA_CLOUD_ACCESS_KEY_ID is not set"),
    ],
)
def test_eventbridge_refuses_what_it_cannot_use(changes: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_relay_config({**EVENTBRIDGE, **changes})


ROCKETMQ = {
    "RELAY_PUBLISHER": "rocketmq",
    "RELAY_ROCKETMQ_ENDPOINTS": "rmq.example.com:8080",
    "RELAY_ROCKETMQ_TOPIC": "orders",
}


def test_rocketmq_reads_its_variables() -> None:
    config = load_relay_config({**ROCKETMQ, "RELAY_ROCKETMQ_FIFO": "true"})
    assert isinstance(config.publisher, RocketMqSettings)
    assert (config.publisher.topic, config.publisher.fifo, config.publisher.tls) == (
        "orders",
        True,
        False,
    )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"RELAY_ROCKETMQ_TOPIC": ""}, "RELAY_ROCKETMQ_TOPIC is not set"),
        ({"RELAY_ROCKETMQ_ENDPOINTS": "https://rmq"}, "RELAY_ROCKETMQ_ENDPOINTS must be host:port"),
        ({"RELAY_ROCKETMQ_ENDPOINTS": "a:1;b:99999"}, "RELAY_ROCKETMQ_ENDPOINTS must be host:port"),
        ({"RELAY_ROCKETMQ_ENDPOINTS": "a:0"}, "RELAY_ROCKETMQ_ENDPOINTS must be host:port"),
        ({"RELAY_ROCKETMQ_ENDPOINTS": "a:\uff18\uff10"}, "RELAY_ROCKETMQ_ENDPOINTS must be"),
        ({"RELAY_ROCKETMQ_FIFO": "maybe"}, "RELAY_ROCKETMQ_FIFO must be true or false"),
        ({"RELAY_ROCKETMQ_ACCESS_KEY": "user"}, "go together"),
    ],
)
def test_rocketmq_refuses_what_it_cannot_use(changes: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_relay_config({**ROCKETMQ, **changes})
