"""How every `outbox` command fails: one `error:` line on stderr and a non-zero exit status.

One place for every command (`main` runs each through `run_guarded`), so a command module
raises and never prints its own traceback. `--debug` prints the traceback before the line.

The exception's class decides, not what went wrong in the world: the same unreachable
Firestore is 2 when a commit reports it (`CommitOutcomeUnknown`) and 1 when a read does.

| what happened | exit status |
| --- | --- |
| `CommandFailed` (a command's own "this did not work") | its `code`, 1 by default |
| `OutboxError` (see below) | 2 |
| a Firestore error that reaches the command as it is (unreachable on a read, or it refused) | 1 |
| an `OSError` (a connection refused, a file unreadable) | 1 |
| Ctrl-C (`KeyboardInterrupt`), or a failure raised while unwinding from it | 130 (128 + SIGINT) |
| stdout's reader gone (piped into `head -1`): no `error:` line (`stdout_closed`) | its own, or 0 |
| anything else (a bug) | 1, with its class, and a hint to run with `--debug` |

`OutboxError` covers bad configuration or input, a commit refused, a commit Firestore did not
answer (`CommitOutcomeUnknown`: `outbox demo` with Firestore unreachable), and a port taken
for `receiver`, `emulator` or `api` (`ListenError`, `EmulatorError`, `ConfigError`).
"""

from __future__ import annotations

import os
import select
import sys
import traceback
from collections.abc import Callable, Iterable
from typing import TypeVar

from google.api_core import exceptions as google_exceptions

from firestore_outbox.errors import OutboxError
from firestore_outbox.firestore.deadline import UNANSWERED, error_class, firestore_host, unanswered
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.masking import masker

EXIT_INTERRUPTED = 130
# An error line stays a line: a long gRPC message is cut, never wrapped over a screen.
MAX_MESSAGE_CHARS = 2000

__all__ = [
    "EXIT_INTERRUPTED",
    "CommandFailed",
    "run_guarded",
    "stdout_closed",
    "stdout_to_devnull",
]

T = TypeVar("T")


class CommandFailed(Exception):
    """Raise from a command to end it with `error: <message>` and exit status `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def run_guarded(
    command: Callable[[], int],
    *,
    debug: bool = False,
    settings: Callable[[], Settings | None] = lambda: None,
    secrets: Callable[[], Iterable[str]] = tuple,
) -> int:
    """Run `command` and return its exit status; on a failure print one `error:` line (every
    configured secret masked) and return the status from the table above.

    `settings` and `secrets` are asked only on a failure: configuration may be what failed."""
    try:
        return command()
    except KeyboardInterrupt:
        return _interrupted(debug, secrets)
    except Exception as exc:  # every failure, a bug's too, ends the same way
        if isinstance(exc, BrokenPipeError) and stdout_closed():
            raise  # not a failure: the reader has gone (`stdout_closed`, below)
        if _raised_by_interrupt(exc):
            # Ctrl-C can land between two statements of a dependency's cleanup (CPython's
            # `Condition.wait` releases its lock, then the signal arrives before its `try`):
            # the `with` around it then fails with "release unlocked lock". Still Ctrl-C.
            return _interrupted(debug, secrets)
        code, message = describe(exc, _quietly(settings))
        if debug:
            _print_traceback(secrets)
        elif code == 1 and not isinstance(exc, (CommandFailed, OSError)) and _is_bug(exc):
            message += " (run `outbox --debug ...` to see the traceback)"
        mask = masker(_quietly(secrets) or ())
        print(f"error: {_one_line(mask(message))}", file=sys.stderr, flush=True)
        return code


def describe(exc: Exception, settings: Settings | None) -> tuple[int, str]:
    """(exit status, message) for a failure."""
    if isinstance(exc, CommandFailed):
        return exc.code, str(exc)
    if isinstance(exc, OutboxError):
        return 2, str(exc)
    if isinstance(exc, google_exceptions.GoogleAPIError):
        if settings is None:
            return 1, f"Firestore: {error_class(exc)}"
        if isinstance(exc, UNANSWERED):
            return 1, unanswered(settings, exc)
        # Firestore answered and refused: its class says why; its text is Firestore's.
        return 1, f"Firestore at {firestore_host(settings)} refused the request " + (
            f"({error_class(exc)})"
        )
    if isinstance(exc, OSError):
        return 1, exc.strerror if exc.strerror and not exc.filename else str(exc)
    return 1, f"{type(exc).__name__}: {exc}"


def _interrupted(debug: bool, secrets: Callable[[], Iterable[str]]) -> int:
    if debug:
        _print_traceback(secrets)
    print("error: interrupted", file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED


def _raised_by_interrupt(exc: BaseException) -> bool:
    """Whether `exc` was raised while a `KeyboardInterrupt` was being handled or unwound."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _is_bug(exc: Exception) -> bool:
    return not isinstance(exc, google_exceptions.GoogleAPIError)


def _quietly(read: Callable[[], T]) -> T | None:
    try:
        return read()
    except Exception:  # the settings that failed to load cannot describe the failure
        return None


def _print_traceback(secrets: Callable[[], Iterable[str]]) -> None:
    # A traceback shows values (a URL, a key's text): masked like the line, even with --debug.
    mask = masker(_quietly(secrets) or ())
    print(mask(traceback.format_exc()), file=sys.stderr, end="", flush=True)


def _one_line(message: str) -> str:
    text = " ".join(message.split())
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 3] + "..."
    return text or "failed"


# A reader that stops reading is not a failure: `outbox status | head -1` ends quietly.
#
# `head` closes the pipe after its first line; the command's next write (or the interpreter's
# last flush) raises `BrokenPipeError`. `main` catches it around everything, argparse's `--help`
# included, and does what the Python documentation recommends (the `signal` module's "Note on
# SIGPIPE"): point stdout at `os.devnull`, so that the flush at exit has nowhere to fail, and
# end with no `error:` line. The exit status is the command's own when it had finished (only
# the final flush failed), else 0: the reader took what it wanted.
#
# A `BrokenPipeError` from a socket (a downstream that hung up) is not this: it counts only when
# stdout itself is a pipe whose reader is gone (`poll` says `POLLERR` on its write end).


def stdout_closed() -> bool:
    """Whether stdout is a pipe (or socket) that no one reads any more."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a test's capture, or closed
        return False
    if not hasattr(select, "poll"):  # Windows: no poll; a closed pipe is what it can be
        return True
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def stdout_to_devnull() -> None:
    """Point stdout's descriptor at /dev/null: what is still buffered goes nowhere, quietly."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)
