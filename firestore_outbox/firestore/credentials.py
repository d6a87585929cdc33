"""`load_credentials`: Google credentials from the file or JSON text the settings name.

Three variables, first set wins: `FIRESTORE_CREDENTIALS_JSON` (the JSON text),
`FIRESTORE_CREDENTIALS_PATH` and `GOOGLE_APPLICATION_CREDENTIALS` (a file). Each holds any
credentials file google-auth knows: a service-account key, an `external_account` credential
configuration (Workload Identity Federation: no key at all), an `authorized_user` file
(`gcloud auth application-default login`), `external_account_authorized_user` or
`impersonated_service_account`.

Each type is built by its own google-auth class, as google-auth recommends over its generic
`load_credentials_from_file` (deprecated in 2.41): a file of a type not listed is refused by
name, and nothing is contacted while building; the first Firestore request fetches a token.
An `external_account` file names no project: `FIRESTORE_PROJECT_ID` is needed with it. There
is no fall-back to google-auth's other sources (gcloud's file, a metadata server): on Function
Compute a metadata-server probe only waits, then fails.
"""

from __future__ import annotations

import json
from typing import Any

from google.auth import credentials as auth_credentials

from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.masking import Masker

SCOPES = ("https://www.googleapis.com/auth/datastore",)
# The fields of a credentials file that are secrets: never in an error message.
SECRET_FIELDS = ("private_key", "private_key_id", "client_secret", "refresh_token")
_AWS_SUBJECT_TOKEN_TYPE = "urn:ietf:params:aws:token-type:aws4_request"
TYPES = (
    "service_account",
    "external_account",
    "authorized_user",
    "external_account_authorized_user",
    "impersonated_service_account",
)


def load_credentials(settings: Settings) -> tuple[auth_credentials.Credentials, str | None]:
    """The credentials the settings name and the project their file names (or None)."""
    if settings.credentials_json:
        try:
            info: Any = json.loads(settings.credentials_json)
        except ValueError:
            # `from None`: the decode error carries the secret text.
            raise ConfigError("FIRESTORE_CREDENTIALS_JSON is not valid JSON") from None
        return from_info(info, "FIRESTORE_CREDENTIALS_JSON")
    for variable, path in (
        ("FIRESTORE_CREDENTIALS_PATH", settings.credentials_path),
        ("GOOGLE_APPLICATION_CREDENTIALS", settings.application_credentials),
    ):
        if path:
            return from_info(_read(path, variable), variable)
    raise ConfigError(
        "no Firestore credentials: set FIRESTORE_CREDENTIALS_PATH or FIRESTORE_CREDENTIALS_JSON "
        "(a service-account key), or GOOGLE_APPLICATION_CREDENTIALS (any credentials file "
        "google-auth loads, such as a Workload Identity Federation configuration), or "
        "FIRESTORE_EMULATOR_HOST for the local emulator"
    )


def from_info(info: Any, variable: str) -> tuple[auth_credentials.Credentials, str | None]:
    """Credentials from a parsed credentials file; a `ConfigError` naming `variable`, never
    the key material, when it is not one."""
    kind = info.get("type") if isinstance(info, dict) else None
    if kind not in TYPES:
        raise ConfigError(
            f"{variable} does not hold a credentials file google-auth loads "
            f"(its type must be one of {', '.join(TYPES)}; got {_shown(kind)})"
        )
    try:
        built = _build(kind, info)
    except ImportError:  # a google-auth older than the type (the range allows 2.14)
        from google.auth import __version__

        raise ConfigError(
            f"{variable} holds a {kind} file, which google-auth {__version__} cannot load: "
            "upgrade google-auth"
        ) from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        if kind == "service_account":  # kept as it was: the key's problem, never the key
            problem = "missing field " + str(exc) if isinstance(exc, KeyError) else "malformed key"
            raise ConfigError(
                f"{variable} holds an unusable service-account key: {problem}"
            ) from None
        secrets = [str(info[name]) for name in SECRET_FIELDS if info.get(name)]
        reason = Masker(secrets)(f"{type(exc).__name__}: {exc}")[:300]
        raise ConfigError(f"{variable} holds an unusable {kind} file: {reason}") from None
    project = info.get("project_id") if kind == "service_account" else None
    return built, str(project) if project else None


def _build(kind: str, info: dict[str, Any]) -> auth_credentials.Credentials:
    scopes = list(SCOPES)
    built: auth_credentials.Credentials
    if kind == "service_account":
        from google.oauth2 import service_account

        built = service_account.Credentials.from_service_account_info(  # type: ignore[no-untyped-call]
            info, scopes=scopes
        )
    elif kind == "authorized_user":
        from google.oauth2 import credentials as user

        built = user.Credentials.from_authorized_user_info(info, scopes=scopes)  # type: ignore[no-untyped-call]
    elif kind == "external_account_authorized_user":
        from google.auth import external_account_authorized_user as federated_user

        # Its scopes are the file's own (`gcloud auth application-default login` asks).
        built = federated_user.Credentials.from_info(info)  # type: ignore[no-untyped-call]
    elif kind == "impersonated_service_account":
        from google.auth import impersonated_credentials

        built = impersonated_credentials.Credentials.from_impersonated_service_account_info(  # type: ignore[no-untyped-call]
            info, scopes=scopes
        )
    else:  # external_account: the same three kinds google-auth tells apart, same order
        source = info.get("credential_source")
        if info.get("subject_token_type") == _AWS_SUBJECT_TOKEN_TYPE:
            from google.auth import aws as federated
        elif isinstance(source, dict) and source.get("executable") is not None:
            from google.auth import pluggable as federated  # type: ignore[no-redef]
        else:
            from google.auth import identity_pool as federated  # type: ignore[no-redef]
        built = federated.Credentials.from_info(info, scopes=scopes)  # type: ignore[no-untyped-call]
    return built


def _read(path: str, variable: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as exc:
        raise ConfigError(f"{variable}: cannot read {path!r} ({exc.strerror})") from None
    except ValueError:
        raise ConfigError(f"{variable}: {path!r} is not valid JSON") from None


def _shown(kind: Any) -> str:
    # The type is not a secret, but a forged file's could be anything: bounded and quoted.
    return "no type" if kind is None else repr(str(kind)[:40])
