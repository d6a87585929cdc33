"""JSON from a peer we do not trust, read so that every way it can be wrong is a `ValueError`.

`json.loads` has two more: nesting deeper than the interpreter's recursion limit raises
`RecursionError`, and a string escape of a lone surrogate (`"\\ud800"`, or its raw UTF-8
bytes, which `json.loads` reads with `surrogatepass`) parses into a `str` that UTF-8 cannot
encode, so it fails later, far from the parse (signing, hashing, Firestore). Here both are
refused where the text is read. Standard library only.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A surrogate escape, or a UTF-8-encoded surrogate (ED A0..BF ..): only then is a walk needed.
_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
_SURROGATE_TEXT = re.compile(r"\\u[dD][89a-fA-F]|[\ud800-\udfff]")


def loads(data: bytes | str, **options: Any) -> Any:
    """`json.loads(data, **options)`, or `ValueError` for too deep a nesting or a string
    (member name or value) holding a lone surrogate. A surrogate pair is one character and
    passes."""
    try:
        value = json.loads(data, **options)
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None
    pattern = _SURROGATE_BYTES if isinstance(data, bytes | bytearray) else _SURROGATE_TEXT
    if pattern.search(data):  # type: ignore[arg-type]
        _check_strings(value)
    return value


def _check_strings(value: Any) -> None:
    # Iterative: the value may be as deep as the parser allowed.
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            _check_text(item)
        elif isinstance(item, dict):
            for name, member in item.items():
                _check_text(name)
                pending.append(member)
        elif isinstance(item, list):
            pending.extend(item)


def _check_text(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"a JSON string holds a lone surrogate at index {exc.start}") from None
