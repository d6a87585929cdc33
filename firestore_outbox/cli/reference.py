"""The reference application's objects, named by an import string (`module:attribute`).

`outbox api`, `outbox demo` and `outbox receiver` run the repository's reference application
(`app/`), which the wheel does not install. As uvicorn and gunicorn do with `--app-dir`, the
current directory is searched too, so the commands work from the root of a checkout; an
application's own API or consumer is named the same way (`--app myservice.api:make_api`).
The library itself never imports `app`.
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
        own = f", or name your own with {option} MODULE:ATTRIBUTE" if option else ""
        raise ConfigError(
            f"{spec}: no module named {exc.name!r}. The reference application (app/) comes "
            "with the firestore-outbox repository, not with the wheel: run this from the root "
            f"of a checkout{own}"
        ) from exc
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ConfigError(f"{spec}: {module_name} has no {attribute!r}") from None
