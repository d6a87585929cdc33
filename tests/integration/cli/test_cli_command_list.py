"""Every `outbox` command is listed and has its own `--help`."""

from __future__ import annotations

import argparse

from firestore_outbox.cli import parser
from tests.support.operator_commands import (
    Run,
    run_outbox,  # noqa: F401  (the `run` fixture)
)


def test_every_command_has_help(run: Run) -> None:
    [action] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    names = set(action.choices)
    assert names == {
        "status",
        "inspect",
        "requeue",
        "replay",
        "held",
        "console",
        "purge",
        "relay",
        "reconcile",
        "demo",
        "receiver",
        "emulator",
        "api",
        "watchdog",
        "fc",
    }
    code, out, _ = run("--help")
    assert code == 0 and all(name in out for name in names)
    for name in names:
        code, out, _ = run(name, "--help")
        assert code == 0 and out.startswith(f"usage: outbox {name}"), out
