"""The framework-independent core: keys, tenants, stored answers, config (fingerprints:
test_idempotency_fingerprint.py)."""

from __future__ import annotations

import base64
import json

import pytest

from firestore_outbox.config.shortcuts import load_idempotency_config
from firestore_outbox.errors import ConfigError
from firestore_outbox.idempotency.answers import FrontDoorAnswer, replayed, stored_fields
from firestore_outbox.idempotency.config import IdempotencyConfig
from firestore_outbox.idempotency.crypto import AnswerUnreadable, EncryptionKeys
from firestore_outbox.idempotency.keys import (
    InvalidKey,
    InvalidTenant,
    parse_key,
    parse_tenant,
    record_id,
)

KEY_A = base64.b64encode(b"a" * 32).decode()
KEY_B = base64.b64encode(b"b" * 32).decode()


@pytest.mark.parametrize(
    ("header", "key"),
    [
        ('"abc"', "abc"),
        (' "8e03978e-40d5" ', "8e03978e-40d5"),
        ('"say \\"hi\\" \\\\ ok"', 'say "hi" \\ ok'),
        ('"' + "k" * 255 + '"', "k" * 255),
        ("abc", "abc"),  # bare: the same key as '"abc"'
        (" 8e03978e-40d5-43e8-bc93-6894a57f9324 ", "8e03978e-40d5-43e8-bc93-6894a57f9324"),
        ("ord_1:a/b.c~d", "ord_1:a/b.c~d"),
        ("k" * 255, "k" * 255),
    ],
)
def test_keys_are_rfc_8941_strings_or_bare_tokens(header: str, key: str) -> None:
    assert parse_key(header) == key


@pytest.mark.parametrize(
    ("header", "says"),
    [
        ("two words", "quoted string"),
        ("abc;p=1", "quoted string"),
        ('abc"', "quoted string"),
        ("k" * 256, "at most 255"),
        ("", "must not be empty"),
        ('"', "no closing quote"),
        ('"abc', "no closing quote"),
        ('""', "must not be empty"),
        ('"' + "k" * 256 + '"', "at most 255"),
        ('"a\\nb"', "escape only"),
        ('"café"', "printable ASCII"),
        ('"a";p=1', "nothing after it"),
    ],
)
def test_malformed_keys_say_what_is_wrong(header: str, says: str) -> None:
    with pytest.raises(InvalidKey, match=says):
        parse_key(header)


def test_tenants_scope_record_ids_and_are_checked() -> None:
    assert parse_tenant(None) == ""
    assert record_id("a", "k") != record_id("b", "k")
    assert record_id("a|b", "k") != record_id("a", "b|k")
    with pytest.raises(InvalidTenant):
        parse_tenant("t\x00")


def test_only_whitelisted_headers_are_stored_and_replays_are_marked() -> None:
    answer = FrontDoorAnswer.of(
        201,
        [("Content-Type", "application/json"), ("Set-Cookie", "s=1"), ("Location", "/o/1")],
        b'{"ok":1}',
    )
    stored = stored_fields(answer, "rid", 1024, None)
    assert [h["name"] for h in stored["headers"]] == ["Content-Type", "Location"]
    again = replayed(stored, "rid", None)
    assert again.body == answer.body and again.status == 201
    assert ("Idempotent-Replayed", "true") in again.headers


def test_an_answer_over_the_cap_is_kept_without_its_body() -> None:
    stored = stored_fields(FrontDoorAnswer.of(200, [], b"x" * 11), "rid", 10, None)
    assert stored["body"] is None and stored["bodyOmitted"] == 11
    again = replayed(stored, "rid", None)
    assert again.body == b"" and ("Idempotent-Body-Omitted", "true") in again.headers


def test_encrypted_answers_round_trip_rotate_and_refuse_a_wrong_key() -> None:
    old = EncryptionKeys.parse(f"k1:{KEY_A}")
    stored = stored_fields(FrontDoorAnswer.of(201, [], b"secret order"), "rid", 1024, old)
    assert stored["body"] is None and b"secret order" not in stored["sealed"]["ciphertext"]
    assert replayed(stored, "rid", old).body == b"secret order"
    rotated = EncryptionKeys.parse(f"k2:{KEY_B},k1:{KEY_A}")
    assert replayed(stored, "rid", rotated).body == b"secret order"
    assert rotated.seal(b"x", "rid")["keyId"] == "k2"
    with pytest.raises(AnswerUnreadable, match="not set"):
        replayed(stored, "rid", EncryptionKeys.parse(f"k2:{KEY_B}"))
    with pytest.raises(AnswerUnreadable, match="does not decrypt"):
        replayed(stored, "rid", EncryptionKeys.parse(f"k1:{KEY_B}"))
    with pytest.raises(AnswerUnreadable, match="does not decrypt"):
        replayed(stored, "another-record", old)  # bound to its record
    with pytest.raises(AnswerUnreadable, match="no key is set"):
        replayed(stored, "rid", None)


@pytest.mark.parametrize(
    ("variables", "names"),
    [
        ({"IDEMPOTENCY_TTL_SECONDS": "0"}, "IDEMPOTENCY_TTL_SECONDS"),
        ({"IDEMPOTENCY_TTL_SECONDS": "day"}, "IDEMPOTENCY_TTL_SECONDS"),
        ({"IDEMPOTENCY_LOCK_TIMEOUT_SECONDS": "-1"}, "IDEMPOTENCY_LOCK_TIMEOUT_SECONDS"),
        ({"IDEMPOTENCY_TTL_SECONDS": "10", "IDEMPOTENCY_LOCK_TIMEOUT_SECONDS": "20"}, "less than"),
        ({"IDEMPOTENCY_MAX_RESPONSE_BYTES": "2000000"}, "IDEMPOTENCY_MAX_RESPONSE_BYTES"),
        ({"IDEMPOTENCY_MAX_REQUEST_BYTES": "0"}, "IDEMPOTENCY_MAX_REQUEST_BYTES"),
        ({"IDEMPOTENCY_COLLECTION": "a/b"}, "IDEMPOTENCY_COLLECTION"),
        ({"IDEMPOTENCY_TENANT_HEADER": "X Tenant"}, "IDEMPOTENCY_TENANT_HEADER"),
        ({"IDEMPOTENCY_ENCRYPTION_KEYS": "nokey"}, "IDEMPOTENCY_ENCRYPTION_KEYS"),
        ({"IDEMPOTENCY_ENCRYPTION_KEYS": "k1:c2hvcnQ="}, "16, 24 or 32 bytes"),
        ({"IDEMPOTENCY_ENCRYPTION_KEYS": f"k:{KEY_A},k:{KEY_B}"}, "twice"),
    ],
)
def test_bad_configuration_names_the_variable(variables: dict[str, str], names: str) -> None:
    with pytest.raises(ConfigError, match=names) as raised:
        load_idempotency_config(variables)
    for value in variables.values():
        if value.count(":") and len(value) > 20:
            assert value.split(":")[1].split(",")[0] not in str(raised.value)


def test_defaults() -> None:
    config = load_idempotency_config({})
    assert config == IdempotencyConfig()
    assert (config.collection, config.ttl_seconds, config.max_response_bytes) == (
        "idempotency_keys",
        86400,
        262144,
    )
    assert config.tenant_environ_key == "HTTP_X_TENANT_ID"
    assert "a" * 10 not in repr(
        load_idempotency_config({"IDEMPOTENCY_ENCRYPTION_KEYS": f"k:{KEY_A}"})
    )
    assert json.dumps(config.tenant_header) == '"X-Tenant-Id"'


def test_encryption_keys_are_secrets_the_logs_mask() -> None:
    from firestore_outbox.config.secrets import configured_secrets

    secrets = configured_secrets({"IDEMPOTENCY_ENCRYPTION_KEYS": f"k1:{KEY_A}, k2:{KEY_B}"})
    assert {KEY_A, KEY_B, f"k1:{KEY_A}"} <= set(secrets)
