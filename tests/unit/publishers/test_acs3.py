"""`firestore_outbox.publishers.fc.acs3` reproduces the example Alibaba Cloud publishes for its V3
signature, and
so does the test server's own verifier (`tests/support/fc3_server.py`): the two agree with the
documentation, not merely with each other."""

from __future__ import annotations

import datetime

from firestore_outbox.consumer.receiver import Received
from firestore_outbox.publishers.fc.acs3 import Credentials, percent_encode, sign
from tests.support.fc3_server import _signature

# The example of the "V3 request structure and signature" / "ROA style request body and
# signature" pages: RunInstances on ECS, an empty body, fixed date and nonce.
QUERY = {
    "ImageId": "win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd",
    "RegionId": "cn-shanghai",
}
SIGNATURE = "e521358f7776c97df52e6b2891a8bc73026794a071b50c3323388c4e0df64804"
SIGNED = "host;x-acs-action;x-acs-content-sha256;x-acs-date;x-acs-signature-nonce;x-acs-version"


def documented_example() -> dict[str, str]:
    return sign(
        "POST",
        "/",
        QUERY,
        {"host": "ecs.cn-shanghai.aliyuncs.com"},
        b"",
        Credentials("YourAccessKeyId", "YourAccessKeySecret"),
        action="RunInstances",
        version="2014-05-26",
        now=datetime.datetime(2023, 10, 26, 9, 1, 1, tzinfo=datetime.timezone.utc),
        nonce="d410180a5abf7fe235dd9b74aca91fc0",
    )


def test_our_signer_reproduces_the_documented_example() -> None:
    headers = documented_example()

    assert headers["x-acs-date"] == "2023-10-26T09:01:01Z"
    assert headers["x-acs-content-sha256"] == (
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert headers["authorization"] == (
        f"ACS3-HMAC-SHA256 Credential=YourAccessKeyId,SignedHeaders={SIGNED},Signature={SIGNATURE}"
    )


def test_the_test_servers_verifier_reproduces_it_too() -> None:
    headers = documented_example()
    query = "ImageId=win2019_1809_x64_dtc_zh-cn_40G_alibase_20230811.vhd&RegionId=cn-shanghai"
    request = Received(f"/?{query}", headers, b"")

    assert _signature(request, SIGNED.split(";"), "YourAccessKeySecret") == SIGNATURE


def test_an_sts_token_is_sent_and_signed_with_the_key_id() -> None:
    headers = sign(
        "POST",
        "/",
        {},
        {"host": "h"},
        b"{}",
        Credentials("AKID", "secret", "sts-token"),
        action="InvokeFunction",
        version="2023-03-30",
    )

    assert headers["x-acs-security-token"] == "sts-token"
    assert headers["x-acs-accesskey-id"] == "AKID"
    signed = headers["authorization"].split("SignedHeaders=")[1].split(",")[0].split(";")
    assert {"x-acs-security-token", "x-acs-accesskey-id", "host"} <= set(signed)
    assert "secret" not in repr(Credentials("AKID", "secret", "sts-token"))


def test_percent_encoding_keeps_only_the_unreserved_characters() -> None:
    assert percent_encode("a-b_c.d~e") == "a-b_c.d~e"
    assert percent_encode("a b*c/é+") == "a%20b%2Ac%2F%C3%A9%2B"
