"""An application's objects, named by an import string (`module:attribute`).

`outbox api --app` and `outbox receiver --consumer` serve an application's own API or
consumer (`--app myservice.api:make_api`); by default the example's, which ships with the
library (`firestore_outbox.example`). As uvicorn and gunicorn do with `--app-dir`, the
current directory is searched too, after the installed packages.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

from firestore_outbox.errors import ConfigError


def load(spec: str, option: str | None = None) -> Any:
    """The object `spec` (`package.module:attribute`) names; `ConfigError` (naming `option`,
    the command-line option that gave it, if any) when it is malformed or not importable."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ConfigError(f"{option or 'the target'} must be MODULE:ATTRIBUTE, got {spec!r}")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)  # after site-packages: an installed package wins, as with -m
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        where = option or "the target"
        raise ConfigError(
            f"{spec}: no module named {exc.name!r}. Pass {where} MODULE:ATTRIBUTE naming a "
            "module that is installed or lies in the current directory (without the option, "
            "the example that comes with the library is served)"
        ) from exc
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ConfigError(f"{spec}: {module_name} has no {attribute!r}") from None
