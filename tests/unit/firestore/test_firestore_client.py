from __future__ import annotations

import json
import traceback
from pathlib import Path
from typing import Any

import pytest
from google.auth.credentials import AnonymousCredentials

from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.client import EMULATOR_DEFAULT_PROJECT, get_db_client
from firestore_outbox.firestore.settings import Settings


def test_emulator_needs_no_credentials_and_has_a_default_project() -> None:
    client = get_db_client(Settings(emulator_host="127.0.0.1:9"))
    assert isinstance(client._credentials, AnonymousCredentials)
    assert client.project == EMULATOR_DEFAULT_PROJECT
    assert client._emulator_host == "127.0.0.1:9"


def test_json_key_gives_a_client_for_its_project(key_info: dict[str, Any]) -> None:
    client = get_db_client(Settings(credentials_json=json.dumps(key_info)))
    assert client.project == "key-project"
    assert client._credentials.service_account_email == key_info["client_email"]


def test_key_file_and_explicit_project_and_database(
    key_info: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "key.json"
    path.write_text(json.dumps(key_info))
    settings = Settings(credentials_path=str(path), project_id="other-project", database="db2")
    client = get_db_client(settings)
    assert (client.project, client._database) == ("other-project", "db2")


def test_no_credentials_outside_the_emulator_fails_naming_both_variables() -> None:
    with pytest.raises(
        ConfigError, match="FIRESTORE_CREDENTIALS_PATH or FIRESTORE_CREDENTIALS_JSON"
    ):
        get_db_client(Settings(project_id="shop-prod"))


def test_unreadable_key_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="FIRESTORE_CREDENTIALS_PATH: cannot read"):
        get_db_client(Settings(credentials_path=str(tmp_path / "missing.json")))


@pytest.mark.parametrize(
    "secret_text",
    [
        '{"private_key": "TOP-SECRET-VALUE", oops',
        '{"type": "service_account", "private_key": "TOP-SECRET-VALUE"}',
        '["TOP-SECRET-VALUE"]',
    ],
)
def test_bad_json_key_error_never_contains_the_secret(secret_text: str) -> None:
    with pytest.raises(ConfigError, match="FIRESTORE_CREDENTIALS_JSON") as raised:
        get_db_client(Settings(credentials_json=secret_text))
    logged = "".join(traceback.format_exception(raised.value))
    assert "TOP-SECRET-VALUE" not in logged
