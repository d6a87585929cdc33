"""`--help` through the real console script: every command has a description, and every option
that takes a value states its default, the `outbox fc` actions' too.

Before, `relay`, `demo`, `receiver` and `emulator` had no description, `purge --batch-size`
and `reconcile --limit` did not state their defaults."""

from __future__ import annotations

import argparse
import re
import subprocess
from pathlib import Path

import pytest

from firestore_outbox.cli import parser
from tests.e2e.cli.test_cli_arguments import OUTBOX

ROOT = Path(__file__).resolve().parents[3]


def subcommands(of: argparse.ArgumentParser | None = None) -> dict[str, argparse.ArgumentParser]:
    command = of or parser()
    [action] = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def flat(text: str) -> str:
    # argparse wraps lines, also after a hyphen: compare without any whitespace.
    return "".join(text.split())


def test_the_top_level_help_lists_every_command_and_debug() -> None:
    done = subprocess.run([OUTBOX, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    listed = {line.split()[0] for line in done.stdout.splitlines() if line.startswith("    ")}
    assert set(subcommands()) <= listed
    assert "--debug" in done.stdout


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_each_command_has_a_description_and_states_its_defaults(name: str) -> None:
    check_help(subcommands()[name], [name])


@pytest.mark.parametrize("name", sorted(subcommands(subcommands()["fc"])))
def test_each_fc_action_has_a_description_and_states_its_defaults(name: str) -> None:
    check_help(subcommands(subcommands()["fc"])[name], ["fc", name])


def check_help(command: argparse.ArgumentParser, argv: list[str]) -> None:
    name = " ".join(argv)
    done = subprocess.run([OUTBOX, *argv, "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    assert command.description and flat(command.description) in flat(done.stdout)
    # Options that take a value, other than a choice among required alternatives (requeue's
    # --event-type), must say what happens without them.
    alternatives = {a for g in command._mutually_exclusive_groups for a in g._group_actions}
    options = [
        a
        for a in command._actions
        if a.option_strings and a.nargs != 0 and a.dest != "help" and a not in alternatives
    ]
    for option in options:
        assert option.help, f"{name} {option.option_strings[0]} has no help"
        assert "default" in option.help, f"{name} {option.option_strings[0]} states no default"
        assert flat(option.help) in flat(done.stdout)
        concrete = option.default not in (None, False, [], argparse.SUPPRESS)
        if concrete and not isinstance(option.default, Path):
            # The stated default is the one argparse uses (8000, 100, 500, 30s, 24h...).
            value = option.default
            spellings = {str(value), f"{value:g}" if isinstance(value, float) else str(value)}
            spellings |= {"24h"} if value == 86400.0 else set()
            assert any(s in option.help for s in spellings), (name, option.help, value)


def test_no_help_cites_a_docs_path_the_wheel_does_not_have() -> None:
    # The wheel installs no docs/ and no site is published: the help says where they are.
    top = subprocess.run([OUTBOX, "--help"], capture_output=True, text=True, timeout=60)
    assert flat("the documentation, which is not installed with the package") in flat(top.stdout)
    for name, command in subcommands().items():
        assert not re.search(r"docs/\S+\.md", command.format_help()), name
    assert not re.search(r"docs/\S+\.md", top.stdout)
