"""Numbers read from environment variables: one parser, so every variable says the same
thing about the same mistake (`ConfigError` naming the variable and quoting its text).

Python's own `int()` and `float()` decide what a number is (surrounding blanks and digit
underscores pass, as they did); what they let through that no setting means (NaN and the
infinities) is refused here, and so is a number of seconds past `MAX_SECONDS` (a date that
far from now is past Firestore's and Python's year 9999). Other ranges are each setting's own
check.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from firestore_outbox.errors import ConfigError

__all__ = [
    "MAX_SECONDS",
    "Get",
    "NumberTable",
    "at_least",
    "check_seconds",
    "flag",
    "parse_seconds",
    "parse_whole",
    "read_numbers",
]

# A lookup of one environment variable (`firestore_outbox.config.Configuration.get`): stripped,
# None when unset.
Get = Callable[[str], "str | None"]

# 100 years: more than any lease, backoff, budget or retention means, and a date that far
# ahead still fits a timestamp (3e11 s past now overflowed the settle's `expireAt`).
MAX_SECONDS = 100 * 365.25 * 86400


def parse_seconds(variable: str, raw: str) -> float:
    """`raw` as a finite number of seconds, or `ConfigError`."""
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{variable} must be a number of seconds, got {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{variable} must be a finite number, got {raw!r}")
    check_seconds(variable, value, raw)
    return value


def check_seconds(variable: str, value: float, raw: str | None = None) -> None:
    """`ConfigError` naming `variable` (and quoting `raw`, the text it was read from) if
    `value` seconds is more than `MAX_SECONDS` either way."""
    if abs(value) > MAX_SECONDS:
        got = repr(raw) if raw is not None else f"{value:g}"
        raise ConfigError(f"{variable} must be at most {MAX_SECONDS:.0f} s (100 years), got {got}")


def parse_whole(variable: str, raw: str, *, what: str = "a whole number") -> int:
    """`raw` as a whole number, or `ConfigError` saying it must be `what`."""
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{variable} must be {what}, got {raw!r}") from None


def human(seconds: float) -> str:
    """`2d 3h`, `4m 10s`, `0.8s`: the two largest units."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    parts: list[str] = []
    left = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if left >= size or (unit == "s" and not parts):
            parts.append(f"{left // size}{unit}")
            left %= size
    return " ".join(parts[:2])


def flag(variable: str, value: str | None) -> bool:
    """A true/false variable (unset: false); `ConfigError` naming it for anything else."""
    if value is None or value.lower() in ("false", "0", "no"):
        return False
    if value.lower() in ("true", "1", "yes"):
        return True
    raise ConfigError(f"{variable} must be true or false, got {value!r}")


def at_least(variable: str, value: int, minimum: int) -> None:
    """`ConfigError` naming `variable` unless `value` is a whole number >= `minimum`."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{variable} must be a whole number >= {minimum}, got {value!r}")


# A field's variable and its parser (`parse_seconds`, `parse_whole`), by field name.
NumberTable = dict[str, tuple[str, Callable[[str, str], float]]]


def read_numbers(get: Get, table: NumberTable) -> dict[str, Any]:
    """The fields of `table` (field: its variable and parser) whose variable is set."""
    numbers: dict[str, Any] = {}
    for name, (variable, parse) in table.items():
        raw = get(variable)
        if raw is not None:
            numbers[name] = parse(variable, raw)
    return numbers
