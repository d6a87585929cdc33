"""Credentials through google-auth, from real files: a service-account key with a freshly
generated RSA key, a Workload Identity Federation (`external_account`) configuration, an
`authorized_user` file. Which class is built, which variable wins, nothing contacted while
building, and a bad file refused naming its variable, never its secrets."""

from __future__ import annotations

import json
import socket
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import google.auth
import pytest
from google.auth import external_account_authorized_user, identity_pool, impersonated_credentials
from google.auth.credentials import AnonymousCredentials
from google.auth.transport.requests import Request
from google.oauth2 import credentials as user_credentials
from google.oauth2 import service_account

from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.secrets import configured_secrets
from firestore_outbox.consumer.receiver import Receiver, ReceiverAnswer
from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings

AUDIENCE = (
    "//iam.googleapis.com/projects/123456789/locations/global/"
    "workloadIdentityPools/alibaba/providers/fc"
)


def federation_config(subject_token_file: Path, token_url: str) -> dict[str, Any]:
    """What `gcloud iam workload-identity-pools create-cred-config` writes for a file-sourced
    OIDC token (the shape an Alibaba Cloud function would use, its token in a file)."""
    return {
        "type": "external_account",
        "audience": AUDIENCE,
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": token_url,
        "credential_source": {"file": str(subject_token_file)},
    }


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every connection or name lookup tried from Python, refused and recorded."""
    tried: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        tried.append(args)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return tried


TOKEN_ANSWER = json.dumps(
    {
        "access_token": "federated-access-token",
        "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
        "token_type": "Bearer",
        "expires_in": 3600,
    }
).encode()


@pytest.fixture
def sts() -> Iterator[Receiver]:
    """A local stand-in for Google's token exchange (STS): the project's test receiver, answering
    a token. Not Google's: this checks what google-auth sends, not what Google accepts."""
    answer = ReceiverAnswer(200, (("Content-Type", "application/json"),), TOKEN_ANSWER)
    with Receiver(lambda received: answer) as receiver:
        yield receiver


def write(path: Path, info: Any) -> str:
    path.write_text(json.dumps(info), encoding="utf-8")
    return str(path)


def test_google_application_credentials_with_a_service_account_key(
    key_info: dict[str, Any], tmp_path: Path, no_network: list[Any]
) -> None:
    path = write(tmp_path / "key.json", key_info)
    settings = Configuration.load({"GOOGLE_APPLICATION_CREDENTIALS": path}).settings
    client = get_db_client(settings)
    assert isinstance(client._credentials, service_account.Credentials)
    assert client.project == "key-project"  # the key's own
    assert no_network == []


def test_an_external_account_file_builds_federated_credentials_without_a_call(
    tmp_path: Path, no_network: list[Any]
) -> None:
    token = tmp_path / "oidc-token"
    token.write_text("subject-token-from-alibaba")
    path = write(
        tmp_path / "wif.json", federation_config(token, "https://sts.googleapis.com/v1/token")
    )
    environ = {"GOOGLE_APPLICATION_CREDENTIALS": path, "FIRESTORE_PROJECT_ID": "shop-prod"}
    client = get_db_client(Configuration.load(environ).settings)
    assert isinstance(client._credentials, identity_pool.Credentials)
    assert client.project == "shop-prod" and client._credentials.token is None
    assert no_network == []  # not even the project lookup google.auth.default() would make


def test_an_external_account_file_names_no_project_so_the_variable_is_asked_for(
    tmp_path: Path,
) -> None:
    path = write(tmp_path / "wif.json", federation_config(tmp_path / "t", "https://sts.x/token"))
    with pytest.raises(ConfigError, match="FIRESTORE_PROJECT_ID is not set"):
        get_db_client(Settings(application_credentials=path))


def test_the_federated_credentials_exchange_the_subject_token_at_the_first_refresh(
    tmp_path: Path, sts: Receiver
) -> None:
    token = tmp_path / "oidc-token"
    token.write_text("subject-token-from-alibaba")
    path = write(tmp_path / "wif.json", federation_config(token, sts.url))
    client = get_db_client(Settings(application_credentials=path, project_id="shop-prod"))
    assert sts.received == []  # nothing at construction
    client._credentials.refresh(Request())
    [exchange] = sts.received
    form = parse_qs(exchange.body.decode())
    assert form["subject_token"] == ["subject-token-from-alibaba"]
    assert form["audience"] == [AUDIENCE]
    assert form["grant_type"] == ["urn:ietf:params:oauth:grant-type:token-exchange"]
    assert "datastore" in form["scope"][0]
    assert client._credentials.token == "federated-access-token"


def test_an_authorized_user_file_builds_user_credentials(
    tmp_path: Path, no_network: list[Any]
) -> None:
    info = {
        "type": "authorized_user",
        "client_id": "id.apps.googleusercontent.com",
        "client_secret": "user-client-secret-value",
        "refresh_token": "user-refresh-token-value",
    }
    path = write(tmp_path / "adc.json", info)
    client = get_db_client(Settings(application_credentials=path, project_id="shop-dev"))
    assert isinstance(client._credentials, user_credentials.Credentials)
    assert no_network == []


@pytest.mark.parametrize(
    ("info", "built"),
    [
        (
            {
                "type": "external_account_authorized_user",
                "audience": AUDIENCE,
                "refresh_token": "r" * 20,
                "token_url": "https://sts.googleapis.com/v1/oauthtoken",
                "token_info_url": "https://sts.googleapis.com/v1/introspect",
                "client_id": "c",
                "client_secret": "s" * 20,
            },
            external_account_authorized_user.Credentials,
        ),
        (
            {
                "type": "impersonated_service_account",
                "service_account_impersonation_url": "https://iamcredentials.googleapis.com/v1/"
                "projects/-/serviceAccounts/relay@shop.iam.gserviceaccount.com:generateAccessToken",
                "source_credentials": {
                    "type": "authorized_user",
                    "client_id": "id",
                    "client_secret": "s" * 20,
                    "refresh_token": "r" * 20,
                },
            },
            impersonated_credentials.Credentials,
        ),
    ],
)
def test_the_other_types_google_auth_loads_are_built_by_their_own_class(
    tmp_path: Path, no_network: list[Any], info: dict[str, Any], built: type
) -> None:
    path = write(tmp_path / "creds.json", info)
    client = get_db_client(Settings(application_credentials=path, project_id="shop-prod"))
    assert isinstance(client._credentials, built) and no_network == []


def test_the_firestore_variables_come_before_google_application_credentials(
    key_info: dict[str, Any], tmp_path: Path
) -> None:
    key = write(tmp_path / "key.json", key_info)
    wif = write(tmp_path / "wif.json", federation_config(tmp_path / "t", "https://sts.x/token"))
    for environ in (
        {"FIRESTORE_CREDENTIALS_PATH": key, "GOOGLE_APPLICATION_CREDENTIALS": wif},
        {"FIRESTORE_CREDENTIALS_JSON": json.dumps(key_info), "GOOGLE_APPLICATION_CREDENTIALS": wif},
    ):
        client = get_db_client(Configuration.load(environ).settings)
        assert isinstance(client._credentials, service_account.Credentials)
    # The FIRESTORE_ variables take any credentials file too.
    settings = Settings(credentials_path=wif, project_id="shop-prod")
    assert isinstance(get_db_client(settings)._credentials, identity_pool.Credentials)


def test_the_emulator_still_needs_no_credentials(tmp_path: Path) -> None:
    wif = write(tmp_path / "wif.json", federation_config(tmp_path / "t", "https://sts.x/token"))
    settings = Settings(emulator_host="127.0.0.1:9", application_credentials=wif)
    assert isinstance(get_db_client(settings)._credentials, AnonymousCredentials)


def test_no_credentials_names_every_variable() -> None:
    with pytest.raises(ConfigError) as raised:
        get_db_client(Settings(project_id="shop-prod"))
    for variable in (
        "FIRESTORE_CREDENTIALS_PATH",
        "FIRESTORE_CREDENTIALS_JSON",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "FIRESTORE_EMULATOR_HOST",
    ):
        assert variable in str(raised.value)


SECRET = "TOP-SECRET-REFRESH-TOKEN"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "cannot read"),
        ('{"type": "authorized_user", "refresh_token": "' + SECRET + '", oops', "not valid JSON"),
        ({"type": "gdch_service_account", "private_key": SECRET}, "type must be one of"),
        ({"refresh_token": SECRET}, "got no type"),
        ({"type": "authorized_user", "refresh_token": SECRET}, "unusable authorized_user"),
        ({"type": "external_account", "audience": "a"}, "unusable external_account"),
        ({"type": "service_account", "private_key": SECRET}, "unusable service-account key"),
    ],
)
def test_a_bad_file_is_refused_naming_the_variable_never_its_secret(
    tmp_path: Path, content: Any, said: str
) -> None:
    path = tmp_path / "bad.json"
    if content is not None:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    with pytest.raises(ConfigError, match="GOOGLE_APPLICATION_CREDENTIALS") as raised:
        get_db_client(Settings(application_credentials=str(path), project_id="shop-prod"))
    assert said in str(raised.value)
    assert SECRET not in "".join(traceback.format_exception(raised.value))


def test_the_secrets_of_a_file_google_application_credentials_names_are_masked(
    tmp_path: Path,
) -> None:
    info = {"type": "authorized_user", "client_secret": "c" * 24, "refresh_token": SECRET}
    path = write(tmp_path / "adc.json", info)
    found = configured_secrets({"GOOGLE_APPLICATION_CREDENTIALS": path})
    assert SECRET in found and "c" * 24 in found


def test_a_type_the_installed_google_auth_cannot_load_asks_for_an_upgrade(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As on a google-auth older than the type: its module cannot be imported.
    monkeypatch.setitem(sys.modules, "google.auth.external_account_authorized_user", None)
    monkeypatch.delattr(google.auth, "external_account_authorized_user")
    path = write(tmp_path / "creds.json", {"type": "external_account_authorized_user"})
    with pytest.raises(ConfigError, match=r"GOOGLE_APPLICATION_CREDENTIALS.*upgrade google-auth"):
        get_db_client(Settings(application_credentials=path, project_id="shop-prod"))
