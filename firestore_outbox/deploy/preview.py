"""`outbox fc preview`: what `s deploy` would deploy, with every secret hidden; use it instead
of `s preview`.

    outbox fc preview                      # s.yaml in the working directory

`s preview` (Serverless Devs 3) renders `s.yaml` with every `${env('...')}` resolved and prints
it, `FIRESTORE_CREDENTIALS_JSON` and its private key included, to a terminal, a CI log, a
screen share. Here Serverless Devs' own renderer (`s preview -o json`) runs with each secret
variable replaced, in its environment only, by a placeholder naming its length
(`<hidden: 2301 characters>`), so the secret never reaches `s` at all; its output is then
masked again with every spelling of every configured secret (the downstream URL's token too)
before anything is printed. Last it checks what Function Compute checks: all environment
variables together, at their real lengths, within 4 KB.

`s deploy` itself is unchanged: it reads the same variables and uploads the real values.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from firestore_outbox.config.loader import Configuration
from firestore_outbox.masking import masker

__all__ = ["FC_ENVIRONMENT_LIMIT_BYTES", "HIDDEN_VARIABLES", "PreviewFailed", "preview", "render"]

# Function Compute refuses a function whose environment variables exceed this in all.
FC_ENVIRONMENT_LIMIT_BYTES = 4096
# Every variable that is or carries a secret (the library's list).
HIDDEN_VARIABLES = Configuration.SECRET_VARIABLES
SECRET_NAME = re.compile(r"SECRET|PASSWORD|TOKEN|CREDENTIAL|PRIVATE|ACCESS_KEY|_KEYS?$")


class PreviewFailed(Exception):
    """`s` is missing or could not render `s.yaml`; the message says which, never a secret."""


def secret_variables(template: Path) -> list[str]:
    """The library's secret variables, and each variable `template` reads whose name says it
    is a secret (`*_SECRET`, `*_PASSWORD`, `*_TOKEN`, ...: a team's own, or one this version
    does not know yet)."""
    named = re.findall(r"\$\{env\(\s*['\"]([A-Za-z0-9_]+)['\"]", template.read_text())
    return list(dict.fromkeys([*HIDDEN_VARIABLES, *filter(SECRET_NAME.search, named)]))


def placeholder(value: str) -> str:
    """What `s` is given instead of a secret: its length only."""
    return f"<hidden: {len(value)} characters>"


def render(
    template: Path, environ: Mapping[str, str], s: str
) -> tuple[dict[str, Any], dict[str, int]]:
    """`template` as `s preview -o json` renders it with the secrets hidden, and the size of
    each function's environment variables at their real lengths (bytes, names included)."""
    hidden = {name: environ[name] for name in secret_variables(template) if environ.get(name)}
    mask = masker([*Configuration.load(environ).secrets(), *hidden.values()])
    child = {**environ, **{name: placeholder(value) for name, value in hidden.items()}}
    if child.get("DOWNSTREAM_SERVICE_URL"):
        child["DOWNSTREAM_SERVICE_URL"] = mask(child["DOWNSTREAM_SERVICE_URL"])
    child.setdefault("SERVERLESS_DEVS_CICD", "1")  # no update check, no banner on stdout
    done = subprocess.run(
        [s, "preview", "-o", "json", "-t", template.name],
        env=child,
        cwd=template.parent,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode != 0:
        tail = mask(" ".join((done.stderr or done.stdout).split()))[-500:]
        raise PreviewFailed(f"`s preview` failed (exit status {done.returncode}): {tail}")
    try:
        rendered: dict[str, Any] = json.loads(mask(done.stdout))
    except ValueError:
        raise PreviewFailed("`s preview -o json` did not print JSON") from None
    # Function Compute's limit is per function: each resource's variables count on their own.
    sizes: dict[str, int] = {}
    for resource_name, resource in rendered.get("resources", {}).items():
        variables = resource.get("props", {}).get("environmentVariables") or {}
        size = 0
        for name, value in variables.items():
            real = hidden.get(name, environ.get(name) if name == "DOWNSTREAM_SERVICE_URL" else None)
            size += len(name.encode()) + len((real if real is not None else str(value)).encode())
        sizes[resource_name] = size
    return rendered, sizes


def preview(template: Path, environ: Mapping[str, str]) -> int:
    """Print `template` rendered with its secrets hidden (stdout) and the environment's size
    against the limit (stderr); 0 when it fits, 1 when it does not or `s` failed."""
    s = environ.get("SERVERLESS_DEVS_BIN") or shutil.which("s")
    try:
        if not s:
            raise PreviewFailed(
                "Serverless Devs' `s` is not installed: npm install -g @serverless-devs/s"
            )
        if not template.is_file():
            raise PreviewFailed(f"no template at {template}")
        rendered, sizes = render(template.resolve(), environ, s)
    except PreviewFailed as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(rendered, indent=2, ensure_ascii=False))
    largest = max(sizes, key=sizes.__getitem__, default="none")
    size = sizes.get(largest, 0)
    verdict = "within" if size <= FC_ENVIRONMENT_LIMIT_BYTES else "OVER"
    print(
        f"environment variables: {size} of {FC_ENVIRONMENT_LIMIT_BYTES} bytes ({verdict} "
        f"Function Compute's limit per function) in the largest function, {largest} ("
        + ", ".join(f"{name} {n}" for name, n in sizes.items())
        + f"); hidden: {', '.join(secret_variables(template))}",
        file=sys.stderr,
    )
    return 0 if size <= FC_ENVIRONMENT_LIMIT_BYTES else 1
