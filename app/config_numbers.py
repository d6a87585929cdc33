"""Numbers read from environment variables: one parser, so every variable says the same
thing about the same mistake (`ConfigError` naming the variable and quoting its text).

Python's own `int()` and `float()` decide what a number is (surrounding blanks and digit
underscores pass, as they did); what they let through that no setting means (NaN and the
infinities) is refused here. Ranges are each setting's own check.
"""

from __future__ import annotations

import math

from app.errors import ConfigError

__all__ = ["parse_seconds", "parse_whole"]


def parse_seconds(variable: str, raw: str) -> float:
    """`raw` as a finite number of seconds, or `ConfigError`."""
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{variable} must be a number of seconds, got {raw!r}") from None
    if not math.isfinite(value):
        raise ConfigError(f"{variable} must be a finite number, got {raw!r}")
    return value


def parse_whole(variable: str, raw: str, *, what: str = "a whole number") -> int:
    """`raw` as a whole number, or `ConfigError` saying it must be `what`."""
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{variable} must be {what}, got {raw!r}") from None
