"""`run_guarded`: the one place every `outbox` command's failure becomes one `error:` line."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from firestore_outbox.cli.failures import (
    EXIT_INTERRUPTED,
    CommandFailed,
    run_guarded,
    stdout_closed,
)
from firestore_outbox.errors import ConfigError

SECRET = "s3cr3t-token-abcdefghijklmnop"


def fail(exc: BaseException) -> int:
    raise exc


@pytest.mark.parametrize(
    ("exc", "code", "line"),
    [
        (ConfigError("LOG_LEVEL must be one of ..."), 2, "error: LOG_LEVEL must be one of ..."),
        (CommandFailed("the relay run stopped: x"), 1, "error: the relay run stopped: x"),
        (OSError(98, "Address already in use"), 1, "error: Address already in use"),
        (KeyboardInterrupt(), EXIT_INTERRUPTED, "error: interrupted"),
    ],
)
def test_each_failure_is_one_line_and_its_exit_status(
    exc: BaseException, code: int, line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_guarded(lambda: fail(exc)) == code
    assert capsys.readouterr().err.splitlines() == [line]


def test_a_bug_is_one_masked_line_with_a_hint_and_debug_adds_the_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    bug = RuntimeError(f"boom\nwith {SECRET} inside")
    assert run_guarded(lambda: fail(bug), secrets=lambda: [SECRET]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line == (
        "error: RuntimeError: boom with *** inside (run `outbox --debug ...` to see the traceback)"
    )
    assert run_guarded(lambda: fail(bug), debug=True, secrets=lambda: [SECRET]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and err.splitlines()[-1].startswith("error: RuntimeError")
    assert SECRET not in err  # the traceback is masked too


def test_a_command_that_succeeds_is_left_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_guarded(lambda: 0) == 0
    assert capsys.readouterr().err == ""


def test_a_failure_raised_while_unwinding_from_ctrl_c_is_still_an_interrupt(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # What CI saw from `outbox status` on Ctrl-C: the signal landed inside CPython's
    # `Condition.wait` after it had released its lock, and the `with` around it then raised
    # "release unlocked lock" with the KeyboardInterrupt as its context.
    lock = threading.Lock()

    def unwinding() -> int:
        try:
            raise KeyboardInterrupt
        finally:
            lock.release()  # RuntimeError: release unlocked lock

    assert run_guarded(unwinding) == EXIT_INTERRUPTED
    assert capsys.readouterr().err.splitlines() == ["error: interrupted"]


def test_a_bug_with_no_interrupt_behind_it_stays_a_bug(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def chained() -> int:
        try:
            raise ValueError("first")
        except ValueError as exc:
            raise RuntimeError("second") from exc

    assert run_guarded(chained) == 1
    assert capsys.readouterr().err.startswith("error: RuntimeError: second")


def test_a_broken_pipe_that_is_not_stdout_is_still_a_failure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A socket's EPIPE (a downstream that hung up) while stdout is fine: not the quiet exit
    # of `outbox status | head -1` (firestore_outbox.cli.failures.stdout_closed).
    assert run_guarded(lambda: fail(BrokenPipeError(32, "Broken pipe"))) == 1
    assert capsys.readouterr().err.splitlines() == ["error: Broken pipe"]


def test_stdout_is_closed_only_when_its_pipe_has_no_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read_end, write_end = os.pipe()
    try:
        with os.fdopen(os.dup(write_end), "w") as pipe:
            monkeypatch.setattr(sys, "stdout", pipe)
            assert not stdout_closed()  # someone still reads
            os.close(read_end)
            read_end = -1
            assert stdout_closed()
    finally:
        os.close(write_end)
        if read_end >= 0:
            os.close(read_end)
