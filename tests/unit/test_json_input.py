"""Untrusted JSON: every way it can be unusable is a `ValueError` at the parse."""

from __future__ import annotations

import json

import pytest

from firestore_outbox.json_input import loads


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        ('{"a": ' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
        (b'{"name": "caf\\ud800"}', "lone surrogate at index 3"),
        (b'{"\\udc00": 1}', "lone surrogate"),
        (b'[[[["ok", "\\uDBFF"]]]]', "lone surrogate"),
        (b'"\xed\xa0\x80"', "lone surrogate"),  # a surrogate's own UTF-8 bytes
        ('["\ud800"]', "lone surrogate"),  # a str that already holds one
        (b"not json", "Expecting value"),
    ],
    ids=["deep-bytes", "deep-text", "escape", "member-name", "nested", "raw-bytes", "str", "bad"],
)
def test_unusable_json_is_a_value_error(text: bytes | str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        loads(text)


@pytest.mark.parametrize(
    "text",
    [b'{"emoji": "\\ud83d\\ude00"}', '{"emoji": "😀"}'.encode(), b'{"path": "C:\\\\ud800"}'],
    ids=["escaped-pair", "raw-pair", "escaped-backslash"],
)
def test_surrogate_pairs_and_look_alikes_read_as_json_reads_them(text: bytes) -> None:
    assert loads(text) == json.loads(text)


def test_options_reach_the_parser() -> None:
    def unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
        if len({name for name, _ in pairs}) != len(pairs):
            raise ValueError("a member is repeated")
        return dict(pairs)

    with pytest.raises(ValueError, match="repeated"):
        loads(b'{"a": 1, "a": 2}', object_pairs_hook=unique)
