"""The delivery URL: whether it is usable, where it keeps secrets, and its credentials.

`DOWNSTREAM_SERVICE_URL` may carry a token in its path or query and a user and password in
its user info; configuration checks it (`url_problem`), masking hides those parts
(`url_secrets`), and the publisher sends the user info as HTTP Basic auth
(`split_credentials`).
"""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit, urlunsplit

from firestore_outbox.masking import MIN_SECRET_LENGTH


def url_problem(url: str) -> str | None:
    """Why `url` cannot be a delivery target (None when it can): a scheme other than http or
    https, no host, a port outside 1-65535, an unclosed IPv6 bracket, spaces or control
    characters. The answer never quotes the URL."""
    if any(c.isspace() or not c.isprintable() for c in url):
        return "it holds spaces or control characters (percent-encode them)"
    try:
        parts = urlsplit(url)
    except ValueError:  # urlsplit's only complaint: "Invalid IPv6 URL"
        return "a bracketed IPv6 host is not closed with ]"
    if parts.scheme.lower() not in ("http", "https"):
        return "another scheme or none"
    if not parts.hostname:
        return "it has no host"
    try:
        usable_port = parts.port != 0  # None (the scheme's default) is fine
    except ValueError:  # not a number, or above 65535
        usable_port = False
    return None if usable_port else "its port is not a number from 1 to 65535"


def url_secrets(url: str) -> list[str]:
    """The parts of `url` that may carry a credential, each to be masked on its own: the
    URL, its request target, its path and each path segment of 16 characters or more, its
    query and each query value, and the user info (also as the HTTP Basic `Authorization`
    token it is sent as): the password, or the user name when there is no password (a token
    sent as the user, `https://TOKEN@host/`). A user name beside a password is a name, not a
    secret: masked on its own, a user `relay` turned every `relay.` log event into `***.`.
    Their other spellings are `Masker`'s job."""
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
        user, colon, password = userinfo.partition(":")
        secrets += [f"{userinfo}@", userinfo, password if colon else user]
        secrets.append(basic_credentials(unquote(user), unquote(password)))
    return [secret for secret in secrets if len(secret) >= MIN_SECRET_LENGTH]


def basic_credentials(user: str, password: str) -> str:
    """The token of an HTTP Basic `Authorization` header (RFC 7617, UTF-8)."""
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def split_credentials(url: str) -> tuple[str, str | None]:
    """`url` without its user info, and that user info as a Basic `Authorization` value."""
    parts = urlsplit(url)
    userinfo, _, host = parts.netloc.rpartition("@")
    if not userinfo:
        return url, None
    user, _, password = userinfo.partition(":")
    bare = urlunsplit(parts._replace(netloc=host))
    return bare, "Basic " + basic_credentials(unquote(user), unquote(password))
