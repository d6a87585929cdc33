"""Masking secrets in every spelling they take: `Masker` and the secrets a URL carries.

A secret leaves the process in more forms than the one configured: a downstream echoes just
the path, one query value, or the percent-decoded target; urllib3 re-escapes a URL in upper
case; an exception's message holds Python's `repr()` of it. So a secret is not looked for as a
string but as a pattern: each of its characters as itself or as any `%XX` escape of its UTF-8
bytes, in either case (and a space also as `+`), for the secret as written and as decoded.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

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


def url_secrets(url: str) -> list[str]:
    """The parts of `url` that may carry a credential, each to be masked on its own: the
    URL, its request target, its path and each path segment of 16 characters or more, its
    query and each query value, and the user info (also as the HTTP Basic `Authorization`
    token it is sent as). Their other spellings are `Masker`'s job."""
    try:
        parts = urlsplit(url)
    except ValueError:  # not a URL at all: the whole value is all we can mask
        return [url]
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    secrets = [url, target, parts.path, parts.query]
    # A long path segment is a token more often than a word (`/hooks/<token>`).
    secrets += [segment for segment in parts.path.split("/") if len(segment) >= 16]
    # Each value as written (its decoded and re-escaped forms are `Masker`'s job).
    secrets += [pair.partition("=")[2] for pair in parts.query.split("&")]
    userinfo = parts.netloc.rpartition("@")[0]
    if userinfo:
        secrets += [f"{userinfo}@", userinfo, *userinfo.split(":", 1)]
        user, _, password = userinfo.partition(":")
        secrets.append(basic_credentials(unquote(user), unquote(password)))
    return [secret for secret in secrets if len(secret) >= MIN_SECRET_LENGTH]


def basic_credentials(user: str, password: str) -> str:
    """The token of an HTTP Basic `Authorization` header (RFC 7617, UTF-8)."""
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
