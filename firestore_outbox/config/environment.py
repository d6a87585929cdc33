"""Reading the environment: `os.environ` over `./.env`, as one read-only snapshot.

Only `firestore_outbox.config.loader.Configuration` calls these; every other module is handed
the settings built from the snapshot.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from dotenv import dotenv_values

from firestore_outbox.numbers import Get

# Read from the working directory only, never a parent's: a `.env` two directories up (another
# project's) silently configuring this one would be the surprise.
DOTENV_FILE = ".env"


def read_environment() -> Mapping[str, str]:
    """A read-only snapshot of `os.environ` over `./.env` (the working directory's only; the
    environment wins), read now. The file is read, never copied into `os.environ`."""
    path = Path.cwd() / DOTENV_FILE
    file_values = {}
    if path.is_file():
        file_values = {k: v for k, v in dotenv_values(path).items() if v is not None}
    return MappingProxyType({**file_values, **os.environ})


def env_reader(environ: Mapping[str, str]) -> Get:
    """A lookup over `environ` that strips whitespace and turns empty values into None."""

    def get(name: str) -> str | None:
        return (environ.get(name) or "").strip() or None

    return get
