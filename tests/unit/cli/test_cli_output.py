"""The small pieces the operations commands share: durations, the progress bar, tables."""

from __future__ import annotations

import argparse
import io
import signal
import sys

import pytest

from firestore_outbox.cli.output import duration, human, print_table, wait_until_stopped
from firestore_outbox.cli.progress import ProgressBar


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("15m", 900), ("36h", 129600), ("7d", 604800), ("1.5h", 5400)],
)
def test_durations(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["", "7 days", "-1d", "1w", "d"])
def test_a_bad_duration_is_refused_with_an_example(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="such as 90s, 15m, 36h, 7d"):
        duration(text)


def test_human_shows_the_two_largest_units() -> None:
    assert [human(s) for s in (0.84, 42, 3301, 90061, 604800)] == [
        "0.8s", "42s", "55m 1s", "1d 1h", "7d"
    ]  # fmt: skip


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_redraws_on_a_terminal() -> None:
    stream = Terminal()
    bar = ProgressBar(4, "purge", stream, width=4)
    bar.update(1)
    bar.update(3)
    bar.close()
    assert stream.getvalue() == "\rpurge [#---] 1/4\rpurge [####] 4/4\n"


def test_off_a_terminal_it_writes_a_line_per_tenth() -> None:
    stream = io.StringIO()
    bar = ProgressBar(1000, "purge", stream, width=10)
    for _ in range(100):
        bar.update(10)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 10 and lines[-1] == "purge [##########] 1000/1000"
    assert lines[0] == "purge [#---------] 100/1000"


def test_tables_pad_their_columns(capsys: pytest.CaptureFixture[str]) -> None:
    print_table(("events", "lastError"), [(2, "HTTP 503"), (11, "poison")], right=1)
    assert capsys.readouterr().out.splitlines() == [
        "events  lastError",
        "     2  HTTP 503",
        "    11  poison",
    ]


class StoppedOnRead(io.StringIO):
    """Standard output whose reader stops the command as soon as a line arrives (a test, a
    supervisor): SIGINT lands during the write."""

    def write(self, text: str) -> int:
        written = super().write(text)
        if text.endswith("\n"):
            signal.raise_signal(signal.SIGINT)
        return written


def test_a_stop_sent_as_soon_as_the_ready_line_is_read_is_a_clean_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Ctrl-C that came between the line and the wait was raised outside it: the command
    # exited 130 ("error: interrupted") instead of 0, seen once under load in the suite.
    out = StoppedOnRead()
    monkeypatch.setattr(sys, "stdout", out)
    previous = signal.getsignal(signal.SIGTERM)
    try:
        assert wait_until_stopped("listening on http://127.0.0.1:1/") == 0
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert out.getvalue() == "listening on http://127.0.0.1:1/\n"
