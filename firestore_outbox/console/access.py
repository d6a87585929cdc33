"""Who may use the console, and which requests may change anything.

- Bound to loopback only, the console asks no token, but answers only requests whose `Host`
  names loopback: a page elsewhere cannot reach it through a DNS name rebound to 127.0.0.1.
- Bound to any other address it refuses to start without `OUTBOX_CONSOLE_TOKEN`; with a
  token set, every request must carry it (`Authorization: Bearer TOKEN`, or the cookie the
  sign-in form sets), compared in constant time.
- Every POST carries the CSRF token of this server's pages (a random value per process,
  compared in constant time) and, when the browser sends an `Origin`, comes from this host.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import urlsplit

from firestore_outbox.errors import ConfigError

TOKEN_VARIABLE = "OUTBOX_CONSOLE_TOKEN"
MIN_TOKEN_CHARS = 16
COOKIE = "outbox_console"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})


def read_token(get: Callable[[str], str | None]) -> str | None:
    """`OUTBOX_CONSOLE_TOKEN`, or None when unset; a short one is a `ConfigError`."""
    token = get("OUTBOX_CONSOLE_TOKEN")
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ConfigError(f"{TOKEN_VARIABLE} must be at least {MIN_TOKEN_CHARS} characters")
    return token


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or a name) can only be reached from this machine."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(addresses: list[tuple[str, int]], token: str | None) -> None:
    """Refuse to serve beyond loopback without a token (`ConfigError` naming the variable)."""
    if token is None and not all(is_loopback(host) for host, _ in addresses):
        raise ConfigError(
            f"outbox console serves only 127.0.0.1 without a token: set {TOKEN_VARIABLE} "
            f"(at least {MIN_TOKEN_CHARS} characters) to listen on another address"
        )


@dataclass(frozen=True)
class Guard:
    """The checks each request passes; `csrf` is the token this process's forms carry."""

    token: str | None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def host_allowed(self, environ: Mapping[str, Any]) -> bool:
        """Without a token, only a request addressed to loopback (no DNS rebinding)."""
        return self.token is not None or is_loopback(_hostname(_header(environ, "HOST")))

    def signed_in(self, environ: Mapping[str, Any]) -> bool:
        if self.token is None:
            return True
        bearer = _header(environ, "AUTHORIZATION")
        offered = bearer[7:] if bearer[:7].lower() == "bearer " else _cookie(environ)
        return offered is not None and self.token_matches(offered)

    def token_matches(self, offered: str) -> bool:
        expected = (self.token or "").encode()
        return self.token is not None and hmac.compare_digest(offered.encode(), expected)

    def post_allowed(self, environ: Mapping[str, Any], form: Mapping[str, list[str]]) -> bool:
        """The form's CSRF token matches and the request comes from this host's pages."""
        offered = (form.get("csrf") or [""])[0]
        if not hmac.compare_digest(offered.encode(), self.csrf.encode()):
            return False
        origin = _header(environ, "ORIGIN")
        return not origin or urlsplit(origin).netloc == _header(environ, "HOST")


def _header(environ: Mapping[str, Any], name: str) -> str:
    return str(environ.get(f"HTTP_{name}") or "")


def _hostname(host_header: str) -> str:
    return urlsplit(f"//{host_header}").hostname or ""


def _cookie(environ: Mapping[str, Any]) -> str | None:
    try:
        jar = SimpleCookie(_header(environ, "COOKIE"))
    except CookieError:
        return None
    morsel = jar.get(COOKIE)
    return None if morsel is None else morsel.value
