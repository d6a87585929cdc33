"""Every `outbox` command is listed and has its own `--help`."""

from __future__ import annotations

from firestore_outbox.cli import COMMANDS
from tests.support.operator_commands import (
    Run,
    run_outbox,  # noqa: F401  (the `run` fixture)
)


def test_every_command_has_help(run: Run) -> None:
    names = {module.__name__.rpartition(".")[2] for module in COMMANDS}
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
    }
    code, out, _ = run("--help")
    assert code == 0 and all(name in out for name in names)
    for name in names:
        code, out, _ = run(name, "--help")
        assert code == 0 and out.startswith(f"usage: outbox {name}"), out
