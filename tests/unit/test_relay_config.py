from __future__ import annotations

import pytest

from app.errors import ConfigError
from app.relay.config import RelayConfig, load_relay_config, read_seconds

URL = "https://hooks.example.com/orders?token=t0ps3cret"


def test_defaults_need_only_the_downstream_url() -> None:
    config = load_relay_config({"DOWNSTREAM_SERVICE_URL": URL})
    assert config == RelayConfig(downstream_url=URL)
    assert (config.max_attempts, config.lock_timeout_seconds) == (5, 300.0)
    assert config.lock_timeout_seconds >= 2 * config.attempt_seconds


def test_every_variable_is_read() -> None:
    config = load_relay_config(
        {
            "DOWNSTREAM_SERVICE_URL": URL,
            "RELAY_MAX_ATTEMPTS": "7",
            "RELAY_LOCK_TIMEOUT_SECONDS": "120",
            "RELAY_BACKOFF_BASE_SECONDS": "0.5",
            "RELAY_BACKOFF_MAX_SECONDS": "60",
            "RELAY_BATCH_SIZE": "250",
            "RELAY_CONCURRENCY": "32",
            "RELAY_TIME_BUDGET_SECONDS": "240",
            "RELAY_HTTP_TIMEOUT_SECONDS": "3",
            "RELAY_FIRESTORE_TIMEOUT_SECONDS": "4",
            "RELAY_EVENT_SOURCE": "/shop/orders",
            "OUTBOX_RETENTION_SECONDS": "86400",
        }
    )
    assert config == RelayConfig(
        downstream_url=URL,
        max_attempts=7,
        lock_timeout_seconds=120,
        backoff_base_seconds=0.5,
        backoff_max_seconds=60,
        batch_size=250,
        concurrency=32,
        time_budget_seconds=240,
        http_timeout_seconds=3,
        firestore_timeout_seconds=4,
        event_source="/shop/orders",
        retention_seconds=86400,
    )


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({}, "DOWNSTREAM_SERVICE_URL is not set"),
        ({"DOWNSTREAM_SERVICE_URL": "ftp://example.com/x"}, "DOWNSTREAM_SERVICE_URL must be"),
        ({"DOWNSTREAM_SERVICE_URL": "https:///nohost"}, "DOWNSTREAM_SERVICE_URL must be"),
        ({"RELAY_MAX_ATTEMPTS": "five"}, "RELAY_MAX_ATTEMPTS must be a whole number, got 'five'"),
        ({"RELAY_MAX_ATTEMPTS": "0"}, "RELAY_MAX_ATTEMPTS must be a whole number >= 1"),
        ({"RELAY_BATCH_SIZE": "501"}, "RELAY_BATCH_SIZE must be at most 500"),
        ({"RELAY_CONCURRENCY": "2.5"}, "RELAY_CONCURRENCY must be a whole number"),
        ({"RELAY_BACKOFF_BASE_SECONDS": "-1"}, "RELAY_BACKOFF_BASE_SECONDS must be greater than 0"),
        ({"RELAY_BACKOFF_MAX_SECONDS": "1"}, "RELAY_BACKOFF_MAX_SECONDS must be at least"),
        ({"RELAY_TIME_BUDGET_SECONDS": "nan"}, "RELAY_TIME_BUDGET_SECONDS must be a finite number"),
        ({"RELAY_LOCK_TIMEOUT_SECONDS": "20"}, "RELAY_LOCK_TIMEOUT_SECONDS must be at least twice"),
        ({"OUTBOX_RETENTION_SECONDS": "-1"}, "OUTBOX_RETENTION_SECONDS must be at least 0"),
        ({"RELAY_EVENT_SOURCE": " "}, None),  # blank means unset, like every variable
    ],
)
def test_bad_values_name_their_variable(variables: dict[str, str], message: str | None) -> None:
    environ = {"DOWNSTREAM_SERVICE_URL": URL, **variables} if variables else {}
    if message is None:
        assert load_relay_config(environ).event_source is None
        return
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")) as caught:
        load_relay_config(environ)
    assert "t0ps3cret" not in str(caught.value)


def test_the_url_is_never_echoed() -> None:
    with pytest.raises(ConfigError) as caught:
        RelayConfig(downstream_url="gopher://user:t0ps3cret@example.com/")
    assert "t0ps3cret" not in str(caught.value)


FC = {
    "RELAY_PUBLISHER": "fc",
    "RELAY_FC_ENDPOINT": "https://123.cn-hangzhou.fc.aliyuncs.com",
    "RELAY_FC_SERVICE": "orders",
    "RELAY_FC_FUNCTION": "on-order-created",
    "ALIBABA_CLOUD_ACCESS_KEY_ID": "AKID",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "t0ps3cret",
}


def test_the_fc_publisher_needs_no_url_but_its_target_and_credentials() -> None:
    config = load_relay_config(FC)
    assert (config.publisher, config.downstream_url, config.fc_invocation_type) == (
        "fc",
        None,
        "async",
    )
    for variable in FC:
        if variable == "RELAY_PUBLISHER":
            continue
        with pytest.raises(ConfigError, match=f"{variable} is not set"):
            load_relay_config({k: v for k, v in FC.items() if k != variable})
    with pytest.raises(ConfigError, match="RELAY_FC_INVOCATION_TYPE must be async or sync"):
        load_relay_config({**FC, "RELAY_FC_INVOCATION_TYPE": "later"})
    with pytest.raises(ConfigError, match="RELAY_PUBLISHER must be one of http, fc"):
        load_relay_config({**FC, "RELAY_PUBLISHER": "kafka"})
    assert "t0ps3cret" not in repr(config)


def test_read_seconds_reads_one_variable_without_the_rest() -> None:
    assert read_seconds("RELAY_LOCK_TIMEOUT_SECONDS", 300.0, {}) == 300.0
    assert (
        read_seconds("RELAY_LOCK_TIMEOUT_SECONDS", 300.0, {"RELAY_LOCK_TIMEOUT_SECONDS": "60"})
        == 60
    )
    with pytest.raises(ConfigError, match="OUTBOX_RETENTION_SECONDS must be at least 0"):
        read_seconds("OUTBOX_RETENTION_SECONDS", 1.0, {"OUTBOX_RETENTION_SECONDS": "-5"})
    with pytest.raises(ConfigError, match="OUTBOX_RETENTION_SECONDS must be a number"):
        read_seconds("OUTBOX_RETENTION_SECONDS", 1.0, {"OUTBOX_RETENTION_SECONDS": "7d"})


def test_signing_secrets_are_read_checked_and_never_shown() -> None:
    secret, previous = "whsec-n3w-0123456789", "whsec-0ld-0123456789"
    config = load_relay_config({"DOWNSTREAM_SERVICE_URL": URL})
    assert config.signing_secrets == ()
    config = load_relay_config(
        {"DOWNSTREAM_SERVICE_URL": URL, "RELAY_SIGNING_SECRET": f"{secret}, {previous}"}
    )
    assert config.signing_secrets == (secret, previous)
    assert secret not in repr(config) and previous not in repr(config)
    with pytest.raises(ConfigError, match="RELAY_SIGNING_SECRET: each secret must be") as caught:
        load_relay_config({"DOWNSTREAM_SERVICE_URL": URL, "RELAY_SIGNING_SECRET": "sh0rt"})
    assert "sh0rt" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://[::1/t0ps3cret", "bracketed IPv6 host"),
        ("http://example.com:99999/t0ps3cret", "port"),
        ("http://example.com:0/t0ps3cret", "port"),
        ("http://example.com:8o8o/t0ps3cret", "port"),
        ("http:///t0ps3cret", "host"),
        ("https://user:t0ps3cret@/x", "host"),
        ("ftp://example.com/t0ps3cret", "http:// or https://"),
        ("example.com/t0ps3cret", "http:// or https://"),
        ("http://exa mple.com/t0ps3cret", "spaces or control characters"),
        ("http://example.com/t0ps3cret\r\nX-Evil: 1", "spaces or control characters"),
    ],
)
def test_a_malformed_url_is_refused_naming_the_variable_not_its_secret(
    url: str, problem: str
) -> None:
    with pytest.raises(ConfigError, match=f"^DOWNSTREAM_SERVICE_URL .*{problem}") as caught:
        load_relay_config({"DOWNSTREAM_SERVICE_URL": url})
    assert "t0ps3cret" not in str(caught.value)
    with pytest.raises(ConfigError, match=r"^RELAY_FC_ENDPOINT "):
        load_relay_config({**FC, "RELAY_FC_ENDPOINT": url})


def test_well_formed_urls_pass() -> None:
    for url in ("http://[::1]:8080/x", "https://u:p%40ss@example.com/h?sig=a%2fb", "HTTPS://E.COM"):
        assert load_relay_config({"DOWNSTREAM_SERVICE_URL": url}).downstream_url == url


MNS = {
    "RELAY_PUBLISHER": "mns",
    "RELAY_MNS_ENDPOINT": "https://1.mns.cn-hangzhou.aliyuncs.com",
    "RELAY_MNS_QUEUE": "orders",
    "ALIBABA_CLOUD_ACCESS_KEY_ID": "id",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET": "secret",
}


def test_mns_reads_its_variables() -> None:
    config = load_relay_config(MNS)
    assert (config.publisher, config.mns_queue, config.mns_topic) == ("mns", "orders", None)


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
    assert (config.publisher, config.eventbridge_bus) == ("eventbridge", "orders-bus")


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
    assert (config.rocketmq_topic, config.rocketmq_fifo, config.rocketmq_tls) == (
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
        ({"RELAY_ROCKETMQ_FIFO": "maybe"}, "RELAY_ROCKETMQ_FIFO must be true or false"),
        ({"RELAY_ROCKETMQ_ACCESS_KEY": "user"}, "go together"),
    ],
)
def test_rocketmq_refuses_what_it_cannot_use(changes: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_relay_config({**ROCKETMQ, **changes})
