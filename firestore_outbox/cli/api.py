"""`outbox api`: the HTTP order API behind the Idempotency-Key middleware, under waitress."""

from __future__ import annotations

import argparse
import math
from typing import Any

from firestore_outbox.cli.reference import load
from firestore_outbox.config.wiring import build_front_door
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.idempotency.limits import DEFAULT_READ_TIMEOUT_SECONDS
from firestore_outbox.idempotency.server import DEFAULT_CONNECTION_LIMIT, create_server

DEFAULT_APP = "firestore_outbox.example:make_api"


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "api",
        help="serve the HTTP order API (POST /orders with Idempotency-Key, GET /orders/ID, "
        "GET /healthz)",
        description="Serve the HTTP order API under waitress: POST /orders (an Idempotency-Key "
        "header required; a repeat replays the first answer), GET /orders/ORDER_ID and GET "
        "/healthz, on the Firestore the configuration names. Ctrl-C stops it.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")
    parser.add_argument("--port", type=port, default=8080, help="default: 8080; 0 picks one")
    parser.add_argument(
        "--threads", type=_threads, default=16, help="requests served at once (default: 16)"
    )
    parser.add_argument(
        "--read-timeout",
        type=_seconds,
        default=DEFAULT_READ_TIMEOUT_SECONDS,
        metavar="SECONDS",
        help="a request must arrive whole within this long of its first byte, and an idle "
        f"connection is closed after as long (default: {DEFAULT_READ_TIMEOUT_SECONDS:g})",
    )
    parser.add_argument(
        "--connection-limit",
        type=_connections,
        default=None,
        help=f"connections held at once; more wait to be accepted "
        f"(default: {DEFAULT_CONNECTION_LIMIT}, or what the hard limit on open files holds)",
    )
    parser.add_argument(
        "--app",
        default=DEFAULT_APP,
        metavar="MODULE:FACTORY",
        help="the WSGI app to serve, as FACTORY(db, settings, idempotency_config) -> app "
        f"(default: {DEFAULT_APP}, the example order API that comes with the library)",
    )
    parser.set_defaults(run=run)


def _whole(low: int, high: int) -> Any:
    def parse(text: str) -> int:
        if not text.isdigit() or not low <= int(text) <= high:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {low} to {high}, got {text!r}"
            )
        return int(text)

    return parse


port, _threads, _connections = _whole(0, 65535), _whole(1, 1000), _whole(1, 100_000)


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(
            f"must be a number of seconds more than 0 and at most 3600, got {text!r}"
        )
    return seconds


def run(args: argparse.Namespace, settings: Settings) -> int:
    config = args.config.idempotency()
    app = build_front_door(args.config, load(args.app, "--app"))
    server = create_server(
        app,
        args.host,
        args.port,
        args.threads,
        max_body_bytes=config.max_request_bytes,
        read_timeout=args.read_timeout,
        connection_limit=args.connection_limit,
    )
    for url in server.urls():
        print(f"listening on {url}", flush=True)
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0
