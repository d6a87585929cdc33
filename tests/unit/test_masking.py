"""`Masker`: a secret is found in every spelling, and nothing else is touched."""

from __future__ import annotations

from firestore_outbox.masking import Masker, masker
from firestore_outbox.publishers.http.urls import url_secrets


def test_every_spelling_of_a_secret_is_masked() -> None:
    mask = Masker(["ab%2fcd ef"])
    for text in (
        "ab%2fcd ef",
        "ab/cd ef",
        "ab%2Fcd+ef",
        "ab%2Fcd%20ef",
        "ab%2fcd%20ef",
        "ab/cd%20ef",
    ):
        assert mask(f"<{text}>") == "<***>", text
    assert mask("ab-cd ef and abcdef") == "ab-cd ef and abcdef"


def test_a_secret_is_found_as_repr_and_json_write_it() -> None:
    mask = Masker(['k"e\\y\n1'])
    assert mask(repr('k"e\\y\n1')) == "'***'"
    assert mask('{"v":"k\\"e\\\\y\\n1"}') == '{"v":"***"}'


def test_the_masker_for_a_set_of_secrets_is_built_once() -> None:
    assert masker(["s3cr3t-a", "s3cr3t-b"]) is masker(("s3cr3t-a", "s3cr3t-b"))


def test_short_values_are_not_taken_for_secrets() -> None:
    assert Masker(["1", "abc"])("v=1 abc") == "v=1 abc"
    assert not Masker([""])


def test_a_urls_secret_parts_are_listed_one_by_one() -> None:
    secrets = url_secrets("https://u:p%40ss@h.test/hooks/0123456789abcdefXYZ/x?sig=s%2f1&v=1")
    assert {"/hooks/0123456789abcdefXYZ/x", "0123456789abcdefXYZ", "s%2f1", "u:p%40ss"} <= set(
        secrets
    )
    assert "v=1" not in secrets and "1" not in secrets and "x" not in secrets
    assert url_secrets("http://[::1/x") == ["http://[::1/x"]


def test_a_user_name_beside_a_password_is_not_a_secret_a_token_alone_is() -> None:
    with_password = url_secrets("amqp://relay:s3cretpassw0rd@broker:5672/vhost")
    assert "s3cretpassw0rd" in with_password and "relay" not in with_password
    assert Masker(with_password)("relay.channel_broken: s3cretpassw0rd") == (
        "relay.channel_broken: ***"
    )
    token_as_user = url_secrets("https://ghp_0123456789abcdef@h.test/events")
    assert "ghp_0123456789abcdef" in token_as_user
