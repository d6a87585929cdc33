"""Masking secrets in every spelling they take (`Masker`).

A secret leaves the process in more forms than the one configured: a downstream echoes just
the path, one query value, or the percent-decoded target; urllib3 re-escapes a URL in upper
case; an exception's message holds Python's `repr()` of it. So a secret is not looked for as a
string but as a pattern: each of its characters as itself or as any `%XX` escape of its UTF-8
bytes, in either case (and a space also as `+`), for the secret as written and as decoded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import unquote

REDACTED = "***"
# Shorter values (a query value `1`, a path `/`) are not secrets worth destroying text for.
MIN_SECRET_LENGTH = 4


class Masker:
    """Replaces every spelling of each of `secrets` by `***`."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if len(secret) >= MIN_SECRET_LENGTH:
                forms |= {secret, unquote(secret), repr(secret)[1:-1]}
        patterns = [_any_escaping(form) for form in sorted(forms, key=len, reverse=True)]
        self._pattern = re.compile("|".join(patterns)) if patterns else None

    def __call__(self, text: str) -> str:
        return text if self._pattern is None else self._pattern.sub(REDACTED, text)

    def __bool__(self) -> bool:
        return self._pattern is not None


def _any_escaping(text: str) -> str:
    """A pattern for `text` with any of its characters percent-escaped, in either case."""
    return "".join(_character(c) for c in text)


def _character(c: str) -> str:
    escaped = "".join(
        f"%[{h[0].upper()}{h[0].lower()}][{h[1].upper()}{h[1].lower()}]"
        for h in (f"{byte:02x}" for byte in c.encode("utf-8", "surrogatepass"))
    )
    choices = [re.escape(c), escaped] + ([r"\+"] if c == " " else [])
    return f"(?:{'|'.join(choices)})"
