"""Request fingerprints: equal requests written differently meet, requests that differ in
meaning never do (JSON, forms, queries, multipart), and stored ones stay what they were."""

from __future__ import annotations

import pytest

from firestore_outbox.idempotency.fingerprint import fingerprint


def _print(body: bytes, content_type: str = "application/json", **changes: str) -> str:
    parts = {"method": "POST", "path": "/orders", "query": "", "tenant": "t", **changes}
    return fingerprint(
        parts["method"], parts["path"], parts["query"], content_type, parts["tenant"], body
    )


def test_equal_requests_written_differently_have_one_fingerprint() -> None:
    assert _print(b'{"a": 1, "b": [1, 2]}') == _print(b'{"b":[1,2],"a":1}')
    form = "application/x-www-form-urlencoded"
    assert _print(b"a=1&b=2", form) == _print(b"b=2&a=1", form)
    assert _print(b"", query="x=1&y=2") == _print(b"", query="y=2&x=1")


def test_method_path_tenant_type_and_body_each_change_the_fingerprint() -> None:
    base = _print(b'{"a":1}')
    assert (
        len(
            {
                base,
                _print(b'{"a":2}'),
                _print(b'{"a":1}', method="PATCH"),
                _print(b'{"a":1}', path="/other"),
                _print(b'{"a":1}', tenant="u"),
                _print(b'{"a":1}', "application/vnd.x+json; v=2"),
                _print(b'{"a":1}', "text/plain"),
            }
        )
        == 7
    )


def test_json_the_parser_cannot_take_is_fingerprinted_not_raised() -> None:
    deep = b"[" * 100_000 + b"]" * 100_000  # past the parser's recursion limit
    assert _print(deep) != _print(deep[1:-1])  # compared as bytes
    surrogate = b'{"a": "\\ud800"}'  # valid JSON, but no UTF-8 form
    assert _print(surrogate) == _print(b'{"a":"\\ud800"}')  # still canonical JSON
    assert _print(surrogate) != _print(b'{"a": "\\ud801"}')


def _multipart(file_bytes: bytes, order: tuple[str, str] = ("a", "b")) -> tuple[bytes, str]:
    boundary = "XyZ"
    fields = {"a": b"1", "b": b"2"}
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{n}"\r\n\r\n'.encode()
        + fields[n]
        + b"\r\n"
        for n in order
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="f"; filename="x.bin"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + file_bytes
        + b"\r\n"
    )
    return b"".join(
        parts
    ) + f"--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


def test_multipart_fields_are_sorted_and_files_hashed_on_their_first_64_kb() -> None:
    big = b"x" * 70_000
    body, kind = _multipart(big)
    body_swapped, _ = _multipart(big, ("b", "a"))
    assert _print(body, kind) == _print(body_swapped, kind)
    changed_late = big[:65_536] + b"y" * (len(big) - 65_536)  # same size, same first 64 KB
    assert _print(_multipart(changed_late)[0], kind) == _print(body, kind)
    changed_early = b"y" + big[1:]
    assert _print(_multipart(changed_early)[0], kind) != _print(body, kind)


FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data; boundary=B"


def test_form_fields_and_queries_keep_every_byte() -> None:
    assert _print(b"note=caf%E9", FORM) != _print(b"note=caf%F1", FORM)  # Latin-1 text
    assert _print(b"a=%ff", FORM) != _print(b"a=%fe", FORM)
    assert _print(b"", query="a=%ff") != _print(b"", query="a=%fe")
    assert _print(b"", query="a=\u0101") == _print(b"", query="a=%C4%81")  # decoded by a server
    # the same bytes written differently still meet
    assert _print(b"a=%41+b&c=caf%C3%A9", FORM) == _print(b"c=caf\xc3\xa9&a=A%20b", FORM)


def _form(*parts: bytes) -> bytes:
    return b"".join(b"--B\r\n" + part + b"\r\n" for part in parts) + b"--B--\r\n"


def _field(value: bytes, name: bytes = b"a", headers: bytes = b"") -> bytes:
    disposition = b'Content-Disposition: form-data; name="' + name + b'"\r\n'
    return disposition + headers + b"\r\n" + value


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (_field(b"\xff"), _field(b"\xfe")),  # not UTF-8
        (_field(b"caf\xe9"), _field(b"caf\xf1")),  # Latin-1 text
        (_field(b"x", name=b"caf\xe9"), _field(b"x", name=b"caf\xf1")),  # a Latin-1 name
        (
            _field(b"\xc3\xa9", headers=b"Content-Type: text/plain; charset=latin-1\r\n"),
            _field(b"\xc3\xa9"),
        ),  # the same bytes in another declared charset
        (
            _field(b"YQ==", headers=b"Content-Transfer-Encoding: base64\r\n"),
            _field(b"YQ==YQ==", headers=b"Content-Transfer-Encoding: base64\r\n"),
        ),  # repaired
        (
            _field(
                b"--C\r\n\r\none\r\n--C--", headers=b"Content-Type: multipart/mixed; boundary=C\r\n"
            ),
            _field(
                b"--C\r\n\r\ntwo\r\n--C--", headers=b"Content-Type: multipart/mixed; boundary=C\r\n"
            ),
        ),
    ],
    ids=["bytes", "latin-1", "latin-1-name", "charset", "bad-base64", "nested"],
)
def test_multipart_fields_that_differ_never_meet(one: bytes, other: bytes) -> None:
    assert _print(_form(one), MULTIPART) != _print(_form(other), MULTIPART)


def test_fingerprints_of_utf_8_forms_are_those_stored_before() -> None:
    """Records stored before forms were read byte for byte still match their repeats."""
    query, form = "q=%C3%A9&p=1", b"note=caf%C3%A9&x=1"
    assert fingerprint("POST", "/notes", query, FORM, "t", form) == (
        "907534f5951eec7bd5c0a6d0821cbd6c4e05439f4689ffb5e4c2136599d6c025"
    )
    text = _field(b"caf\xc3\xa9", name=b"note")
    upload = (
        b'Content-Disposition: form-data; name="f"; filename="a.txt"\r\n'
        b"Content-Type: text/plain\r\n\r\nhello"
    )
    assert fingerprint("POST", "/notes", "", MULTIPART, "t", _form(text, upload)) == (
        "559d36b8339289ad43dc3fb5e1c9424140e5ee808c021f8e848ce4ad16c7c0af"
    )
