"""Serve the order API under waitress, a production WSGI server (`outbox api`)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from app.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

logger = logging.getLogger(__name__)


def create_server(app: Callable[..., Any], host: str, port: int, threads: int) -> Any:
    """A bound waitress server (port 0 picks a free one: see `.effective_port`)."""
    try:
        from waitress import create_server as waitress_server
    except ImportError:
        raise ConfigError(
            "outbox api needs the waitress package: pip install 'firestore-outbox[api]'"
        ) from None
    try:
        return waitress_server(app, host=host, port=port, threads=threads, ident="firestore-outbox")
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
