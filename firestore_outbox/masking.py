"""Masking secrets in every spelling they take (`Masker`).

A secret leaves the process in more forms than the one configured: a downstream echoes just
the path, one query value, or the percent-decoded target; urllib3 re-escapes a URL in upper
case; an exception's message holds Python's `repr()` of it; a JSON log line escapes quotes
and backslashes. So each secret is looked for in each of those spellings: as written, with
its percent-escapes in upper and in lower case, decoded, and decoded then escaped again (as a
path, as a query value, as a form value), each also as `repr()` and JSON write it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus, unquote, unquote_plus

REDACTED = "***"
# Shorter values (a query value `1`, a path `/`) are not secrets worth destroying text for.
MIN_SECRET_LENGTH = 4
_ESCAPE = re.compile(r"%[0-9a-fA-F]{2}")
_MAX_URL_PART = 512


class Masker:
    """Replaces every spelling of each of `secrets` by `***` (see the module's docstring)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if len(secret) >= MIN_SECRET_LENGTH:
                forms |= spellings(secret)
        # One pattern of literal alternatives, longest first, so a secret that contains
        # another is masked whole.
        ordered = sorted(forms, key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None

    def __call__(self, text: str) -> str:
        return text if self._pattern is None else self._pattern.sub(REDACTED, text)

    def __bool__(self) -> bool:
        return self._pattern is not None


def masker(secrets: Iterable[str]) -> Masker:
    """The `Masker` for `secrets`, built once per process for each set: building one compiles
    every spelling of every secret (a service-account key makes that a few hundred ms), and
    the relay function configures its logging on every invocation."""
    return _masker(tuple(secrets))


@functools.lru_cache(maxsize=16)
def _masker(secrets: tuple[str, ...]) -> Masker:
    return Masker(secrets)


def spellings(secret: str) -> set[str]:
    """The forms `secret` may take in an error message or a log line."""
    forms = {secret}
    # URL spellings for what may be part of a URL; a longer secret is a key, never escaped
    # (and its escaped spellings would make the pattern many times larger).
    if len(secret) <= _MAX_URL_PART:
        forms |= {_escapes_in(secret, True), _escapes_in(secret, False)}
        for decoded in {unquote(secret), unquote_plus(secret)}:
            for escaped in (quote(decoded, "/"), quote(decoded, ""), quote_plus(decoded)):
                forms |= {decoded, escaped, _escapes_in(escaped, False)}
    quoted = {repr(form)[1:-1] for form in forms}
    in_json = {json.dumps(form, ensure_ascii=False)[1:-1] for form in forms | quoted}
    return {form for form in forms | quoted | in_json if len(form) >= MIN_SECRET_LENGTH}


def _escapes_in(text: str, upper: bool) -> str:
    """`text` with its percent-escapes in upper or in lower case."""
    return _ESCAPE.sub(lambda m: m.group().upper() if upper else m.group().lower(), text)
