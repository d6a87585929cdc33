from __future__ import annotations

import os
from pathlib import Path

import pytest

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.shortcuts import load_settings
from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.settings import Settings


def test_defaults_follow_the_contract() -> None:
    settings = load_settings({})
    assert settings == Settings()
    assert (settings.database, settings.orders_collection, settings.outbox_collection) == (
        "(default)",
        "orders",
        "outbox",
    )
    assert settings.log_level == "INFO"


def test_values_are_read_and_trimmed() -> None:
    settings = load_settings(
        {
            "FIRESTORE_PROJECT_ID": " shop-prod ",
            "FIRESTORE_DATABASE": "orders-db",
            "FIRESTORE_EMULATOR_HOST": "localhost:8080",
            "ORDERS_COLLECTION": "shop_orders",
            "OUTBOX_COLLECTION": "shop_outbox",
            "LOG_LEVEL": "debug",
        }
    )
    assert settings.project_id == "shop-prod"
    assert settings.database == "orders-db"
    assert settings.emulator_host == "localhost:8080"
    assert (settings.orders_collection, settings.outbox_collection) == (
        "shop_orders",
        "shop_outbox",
    )
    assert settings.log_level == "DEBUG"


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"FIRESTORE_PROJECT_ID": "Bad_Project"}, "FIRESTORE_PROJECT_ID"),
        ({"FIRESTORE_EMULATOR_HOST": "localhost"}, "FIRESTORE_EMULATOR_HOST"),
        ({"FIRESTORE_EMULATOR_HOST": "localhost:99999"}, "FIRESTORE_EMULATOR_HOST"),
        ({"ORDERS_COLLECTION": "a/b"}, "ORDERS_COLLECTION"),
        ({"OUTBOX_COLLECTION": "__outbox__"}, "OUTBOX_COLLECTION"),
        ({"OUTBOX_COLLECTION": "orders"}, "OUTBOX_COLLECTION"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
        ({"FIRESTORE_TIMEOUT_SECONDS": "soon"}, "FIRESTORE_TIMEOUT_SECONDS"),
        ({"FIRESTORE_TIMEOUT_SECONDS": "0"}, "FIRESTORE_TIMEOUT_SECONDS"),
        ({"FIRESTORE_TIMEOUT_SECONDS": "-1"}, "FIRESTORE_TIMEOUT_SECONDS"),
        ({"FIRESTORE_TIMEOUT_SECONDS": "nan"}, "FIRESTORE_TIMEOUT_SECONDS"),
        ({"FIRESTORE_TIMEOUT_SECONDS": "inf"}, "FIRESTORE_TIMEOUT_SECONDS"),
        (
            {"FIRESTORE_CREDENTIALS_PATH": "/k.json", "FIRESTORE_CREDENTIALS_JSON": "{}"},
            "FIRESTORE_CREDENTIALS_PATH",
        ),
    ],
)
def test_malformed_variable_fails_fast_naming_it(environ: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError, match=variable) as raised:
        load_settings(environ)
    assert isinstance(raised.value, ValueError)


def test_secret_is_not_in_repr() -> None:
    settings = load_settings({"FIRESTORE_CREDENTIALS_JSON": '{"private_key": "s3cr3t"}'})
    assert "s3cr3t" not in repr(settings)


def test_dotenv_in_cwd_is_read_and_process_environment_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text("ORDERS_COLLECTION=from_file\nOUTBOX_COLLECTION=file_outbox\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OUTBOX_COLLECTION", "from_env")
    monkeypatch.delenv("ORDERS_COLLECTION", raising=False)
    settings = load_settings()
    assert settings.orders_collection == "from_file"
    assert settings.outbox_collection == "from_env"
    assert "ORDERS_COLLECTION" not in os.environ


def test_the_default_configuration_is_read_once_per_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    Configuration.default.cache_clear()
    monkeypatch.setenv("ORDERS_COLLECTION", "first_read")
    try:
        assert Configuration.default().settings.orders_collection == "first_read"
        monkeypatch.setenv("ORDERS_COLLECTION", "second_read")
        assert Configuration.default().settings.orders_collection == "first_read"
        assert load_settings().orders_collection == "second_read"
    finally:
        Configuration.default.cache_clear()


def test_the_firestore_deadline_defaults_to_10_seconds_and_is_read() -> None:
    assert load_settings({}).firestore_timeout_seconds == 10.0
    assert load_settings({"FIRESTORE_TIMEOUT_SECONDS": " 2.5 "}).firestore_timeout_seconds == 2.5
