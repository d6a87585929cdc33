"""The `outbox` command. Each subcommand lives in its own module under `firestore_outbox.cli`.

A command module exposes `register(commands)`, which adds its parser to the subparsers and
sets `run=<function(args, settings) -> exit code>` as a default. `main` reads the
configuration once (`args.config`, an `firestore_outbox.config.loader.Configuration`, holds the rest
of it) and runs the command through `firestore_outbox.cli.failures.run_guarded`, so every failure of
every command, one added later included, ends in one `error:` line and a non-zero exit status.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import NoReturn

from firestore_outbox import _quiet_python310  # noqa: F401  (its effect: see the module)
from firestore_outbox.cli import (
    api,
    console,
    demo,
    emulator,
    held,
    inspect,
    purge,
    receiver,
    reconcile,
    relay,
    replay,
    requeue,
    status,
)
from firestore_outbox.cli.failures import run_guarded, stdout_closed, stdout_to_devnull
from firestore_outbox.config.loader import Configuration
from firestore_outbox.deploy import command as fc
from firestore_outbox.firestore.client import close_clients, holding_clients, live_clients
from firestore_outbox.observability.logs import configure_logging
from firestore_outbox.publishers.rocketmq.client import keep_rocketmq_out_of_home

COMMANDS = (
    status,
    inspect,
    requeue,
    replay,
    held,
    console,
    purge,
    relay,
    reconcile,
    demo,
    receiver,
    emulator,
    api,
    fc,
)

__all__ = ["main"]

# The wheel installs no documentation and the project publishes no site (mkdocs.yml has no
# site_url): say where it is rather than cite a path the user does not have.
WHERE_THE_DOCS_ARE = (
    "Every variable, command and failure is described in the documentation, which is not "
    "installed with the package: the docs/ folder of the firestore-outbox repository (build "
    "the site with `mkdocs serve` there; the variables are on Reference > Configuration)."
)

# How long the Firestore clients a command made may take to close (a call in flight is
# cancelled, not waited for, so this is a bound for a gRPC that does not answer at all).
CLOSE_SECONDS = 5.0


def main(argv: Sequence[str] | None = None) -> int:
    code: int | None = None
    try:
        code = _run(argv)
        sys.stdout.flush()  # here, where a closed pipe can still be told apart
    except BrokenPipeError:
        if not stdout_closed():
            raise
        stdout_to_devnull()  # `outbox status | head -1`: quiet (firestore_outbox.cli.failures)
    return 0 if code is None else code


def _run(argv: Sequence[str] | None) -> int:
    args = parser().parse_args(argv)
    config: Configuration | None = None

    def command() -> int:
        nonlocal config
        config = args.config = Configuration.load()
        configure_logging(config.secrets(), config.settings.log_level, thread_exceptions=True)
        keep_rocketmq_out_of_home()  # this process is the CLI's: nothing in ~/logs
        code: int = args.run(args, config.settings)
        return code

    before = live_clients()  # a caller's own clients (tests run commands in-process)
    # The command's clients are held until closed here, on a thread, for a bounded time: a
    # call Ctrl-C interrupted is still open, and a channel freed with it open waits for good
    # in its `__del__`, in the main thread (firestore_outbox.firestore.client.holding_clients).
    with holding_clients():
        code = run_guarded(
            command,
            debug=args.debug,
            settings=lambda: config.settings if config else None,
            secrets=lambda: config.secrets() if config else [],
        )
        close_clients(CLOSE_SECONDS, keep=before)
    return code


def parser() -> argparse.ArgumentParser:
    """The `outbox` parser with every command registered."""
    root = _Parser(
        prog="outbox",
        description="Operate a Firestore transactional outbox and its relay. Settings come "
        f"from the environment and ./.env. {WHERE_THE_DOCS_ARE}",
        epilog="Run `outbox COMMAND --help` for a command's options and their defaults.",
    )
    root.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    root.add_argument(
        "--debug",
        action="store_true",
        help="on a failure, print the traceback before the one-line error",
    )
    commands = root.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(commands)
    return root


class _Parser(argparse.ArgumentParser):
    """argparse, with its refusal as our one `error:` line (argparse starts it with the
    program's name); subcommands' parsers are of this class too."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"error: {message} (see `{self.prog} --help`)\n")


def _version() -> str:
    try:
        return version("firestore-outbox")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


if __name__ == "__main__":
    sys.exit(main())
