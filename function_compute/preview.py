"""Show what `s deploy` would deploy, with every secret hidden: use this instead of `s preview`.

    python3 -m function_compute.preview            # s.yaml in the working directory

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

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import firestore_outbox.function_compute  # noqa: F401  (first: it quiets google-api-core's 3.10 notice)
from firestore_outbox import Configuration

# Function Compute refuses a function whose environment variables exceed this in all.
FC_ENVIRONMENT_LIMIT_BYTES = 4096
# Every variable that is or carries a secret (the library's list).
HIDDEN_VARIABLES = Configuration.SECRET_VARIABLES


class PreviewFailed(Exception):
    """`s` is missing or could not render `s.yaml`; the message says which, never a secret."""


def placeholder(value: str) -> str:
    return f"<hidden: {len(value)} characters>"


def render(
    template: Path, environ: Mapping[str, str], s: str
) -> tuple[dict[str, Any], dict[str, int]]:
    """`template` as `s preview -o json` renders it with the secrets hidden, and the size of
    each function's environment variables at their real lengths (bytes, names included)."""
    config = Configuration.load(environ)
    mask = config.mask
    hidden = {name: environ[name] for name in HIDDEN_VARIABLES if environ.get(name)}
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m function_compute.preview",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--template",
        type=Path,
        default=Path("s.yaml"),
        metavar="FILE",
        help="the Serverless Devs template (default s.yaml in the working directory)",
    )
    args = parser.parse_args(argv)
    s = os.environ.get("SERVERLESS_DEVS_BIN") or shutil.which("s")
    try:
        if not s:
            raise PreviewFailed(
                "Serverless Devs' `s` is not installed: npm install -g @serverless-devs/s"
            )
        if not args.template.is_file():
            raise PreviewFailed(f"no template at {args.template}")
        environ = Configuration.load().environ  # the environment over ./.env, as `s` reads
        rendered, sizes = render(args.template.resolve(), environ, s)
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
        + f"); hidden: {', '.join(HIDDEN_VARIABLES)}",
        file=sys.stderr,
    )
    return 0 if size <= FC_ENVIRONMENT_LIMIT_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
