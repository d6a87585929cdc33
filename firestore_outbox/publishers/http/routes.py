"""Where a POST goes: through which proxy, and to which addresses.

The proxy comes from the usual variables (`http_proxy`, `HTTPS_PROXY`, `NO_PROXY`, ... as
`urllib.request.getproxies` and `proxy_bypass` read them), decided once per URL. The name
libcurl connects to (the downstream's, or the proxy's when one stands in front) is looked up
here, on the shared, capped pool of `firestore_outbox.publishers.http.dns` within the
attempt's deadline, and handed to libcurl as a `CURLOPT_RESOLVE` entry: a resolver that hangs
holds at most one of that pool's threads per name, never a thread per attempt, and a lookup
unanswered by the deadline is a DNS failure like any other. Addresses are kept for
`ADDRESSES_SECONDS`, as libcurl's own DNS cache keeps them by default; a connection kept
alive is reused whatever the name resolves to meanwhile. IP literals are never looked up.
"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from dataclasses import dataclass
from urllib.parse import urlsplit

from firestore_outbox.publishers.http import dns

ADDRESSES_SECONDS = 60.0  # libcurl's default DNS_CACHE_TIMEOUT
_MAX_ROUTES = 64  # a publisher sends to one URL or a few
_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Route:
    """How to reach one URL: `proxy` ("" for none) and the `host:port` libcurl connects to
    (`name` None when that host is an IP literal: nothing to look up)."""

    proxy: str
    name: str | None
    host: str
    port: int


class Routes:
    """The routes and looked-up addresses of one transport."""

    def __init__(self) -> None:
        self._routes: dict[str, Route] = {}
        self._addresses: dict[str, tuple[float, str]] = {}  # host:port -> (until, addresses)
        self._lock = threading.Lock()

    def route(self, url: str) -> Route:
        """The route of `url`, decided the first time it is asked for."""
        route = self._routes.get(url)
        if route is None:
            route = _route_of(url)
            with self._lock:
                if len(self._routes) >= _MAX_ROUTES:
                    self._routes.clear()
                self._routes[url] = route
        return route

    def addresses(self, route: Route, timeout: float) -> str | None:
        """`route`'s name as a `CURLOPT_RESOLVE` entry (`host:port:address,...`), looked up
        within `timeout` s unless known for less than `ADDRESSES_SECONDS`; None for an IP
        literal. Raises `socket.gaierror` (`dns.ResolutionTimeout` when the lookup was
        unanswered in time)."""
        if route.name is None:
            return None
        known = self._addresses.get(route.name)
        now = time.monotonic()
        if known is not None and known[0] > now:
            return known[1]
        found = dns.resolve(route.host, route.port, socket.AF_UNSPEC, timeout)
        entry = f"{route.name}:{_addresses_of(found)}"
        with self._lock:
            self._addresses[route.name] = (now + ADDRESSES_SECONDS, entry)
        return entry


def _route_of(url: str) -> Route:
    parts = urlsplit(url)
    host = parts.hostname or ""
    proxy = urllib.request.getproxies().get(parts.scheme, "")
    if proxy and urllib.request.proxy_bypass(host):
        proxy = ""
    target = urlsplit(proxy if "://" in proxy else f"http://{proxy}") if proxy else parts
    name, port = target.hostname or "", target.port or _PORTS.get(target.scheme, 80)
    return Route(proxy, None if dns.is_ip_literal(name) else f"{name}:{port}", name, port)


def _addresses_of(found: list[dns.AddressInfo]) -> str:
    seen: dict[str, None] = {}
    for family, *_, address in found:
        seen[f"[{address[0]}]" if family == socket.AF_INET6 else address[0]] = None
    return ",".join(seen)
