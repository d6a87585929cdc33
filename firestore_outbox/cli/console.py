"""`outbox console`: the web console (firestore_outbox.console) under waitress."""

from __future__ import annotations

import argparse
from typing import Any

from firestore_outbox.cli.api import port
from firestore_outbox.cli.output import add_lock_timeout, lock_timeout, ops_client, seconds
from firestore_outbox.console import make_console
from firestore_outbox.console.access import check_binding, read_token
from firestore_outbox.console.app import MAX_FORM_BYTES
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.idempotency.server import create_server
from firestore_outbox.observability.logs import configure_logging


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "console",
        help="serve a web console: the backlog live, FAILED events, held aggregates; "
        "requeue and release from the page",
        description="Serve the outbox console under waitress: an overview refreshed live "
        "(the relay's health first, as `outbox watchdog` judges it; events per status, the "
        "oldest due event, throughput and backlog, partitions, held aggregates), "
        "the FAILED events by type and aggregate, one event in full, and requeue and release "
        "with a dry run first. Binds 127.0.0.1; any other address needs OUTBOX_CONSOLE_TOKEN. "
        "Ctrl-C stops it.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="default: 127.0.0.1")
    parser.add_argument("--port", type=port, default=8081, help="default: 8081; 0 picks one")
    parser.add_argument(
        "--refresh",
        type=seconds,
        default=5.0,
        metavar="SECONDS",
        help="how often the overview reads the outbox again (default: 5)",
    )
    add_lock_timeout(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    token = read_token(args.config.get)
    secrets = [*args.config.secrets(), *([token] if token else [])]
    configure_logging(
        secrets, settings.log_level, thread_exceptions=True
    )  # the token masked in logs too
    app = make_console(
        ops_client(settings),
        settings,
        token=token,
        secrets=secrets,
        lock_timeout_seconds=lock_timeout(args),
        partition_collection=args.config.collections.partitions,
        partitions=args.config.partitions().count,
        refresh_seconds=args.refresh,
        health_collection=args.config.collections.health,
        thresholds=args.config.watchdog().thresholds,
    )
    server = create_server(
        app, args.host, args.port, 4, max_body_bytes=MAX_FORM_BYTES, command="console"
    )
    try:
        check_binding(server.addresses, token)
        for url in server.urls():
            print(f"listening on {url}", flush=True)
        server.run()
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    return 0
