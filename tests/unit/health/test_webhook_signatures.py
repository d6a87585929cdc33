"""The robots' signatures, against the worked examples of their documentation's recipe
(recomputed here from the recipe, independently of the module)."""

from __future__ import annotations

import base64
import hashlib
import hmac
from urllib.parse import quote

from firestore_outbox.health.webhooks import dingtalk_sign, lark_sign


def test_dingtalk_signs_timestamp_newline_secret_with_the_secret() -> None:
    secret, ts = "SEC0123456789abcdef", 1700000000123
    expected = base64.b64encode(
        hmac.new(secret.encode(), f"{ts}\n{secret}".encode(), hashlib.sha256).digest()
    ).decode()
    assert dingtalk_sign(secret, ts) == quote(expected, safe="")
    assert dingtalk_sign(secret, ts + 1) != dingtalk_sign(secret, ts)


def test_lark_signs_an_empty_message_keyed_by_timestamp_newline_secret() -> None:
    secret, ts = "lark-secret-0123", 1700000000
    expected = base64.b64encode(
        hmac.new(f"{ts}\n{secret}".encode(), b"", hashlib.sha256).digest()
    ).decode()
    assert lark_sign(secret, ts) == expected
    assert lark_sign("another-secret-99", ts) != expected
