"""`outbox fc init | build | preview`: deploy to Alibaba Cloud Function Compute from your own
repository, from any directory (the `outbox` command's group; the work is in the modules
beside it, imported when a subcommand runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from firestore_outbox.firestore.settings import Settings


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "fc",
        help="Function Compute: write a skeleton, build the code package, preview the deploy",
        description="Deploy the relay and its watchdog to Alibaba Cloud Function Compute 3.0 "
        "from your own repository with Serverless Devs (`s deploy`): `init` writes index.py, "
        "s.yaml and the Firestore files, `build` makes the code package s.yaml uploads, "
        "`preview` shows what would be deployed with every secret hidden.",
    )
    actions = parser.add_subparsers(dest="fc_command", required=True, metavar="ACTION")
    init = actions.add_parser(
        "init",
        help="write index.py, s.yaml, firestore.indexes.json, firestore.rules, "
        "credentials.example and requirements.txt",
        description="Write a deployable skeleton into DIR: index.py (the relay, the watchdog "
        "and, with --nudge http, the HTTP-triggered relay), s.yaml (their functions and "
        "triggers; secrets by ${env(...)} reference only), firestore.indexes.json and "
        "firestore.rules for the configured collection names, credentials.example and "
        "requirements.txt. An existing file is kept unless --force.",
    )
    init.add_argument(
        "directory",
        nargs="?",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="where to write (default: the working directory)",
    )
    init.add_argument(
        "--nudge",
        choices=("off", "http"),
        default="off",
        help="http: also the relay behind an HTTP trigger, for signed nudges "
        "(OUTBOX_NUDGE=http; default: off, the timer only)",
    )
    init.add_argument("--force", action="store_true", help="overwrite files that exist")
    init.set_defaults(run=run_init)

    build = actions.add_parser(
        "build",
        help="build the code package for Function Compute's python3.10",
        description="Build the code directory s.yaml uploads: your requirements (this "
        "library among them) for CPython 3.10 on manylinux x86_64 with glibc 2.28, whatever "
        "machine builds it, and your own code (index.py and the packages in the working "
        "directory). Native libraries are checked against glibc 2.28 and the entry points "
        "s.yaml names are imported in a clean interpreter.",
    )
    build.add_argument(
        "--output",
        type=Path,
        default=Path("build/fc"),
        metavar="DIR",
        help="the code directory to (re)create (default: build/fc)",
    )
    build.add_argument(
        "--requirements",
        type=Path,
        default=None,
        metavar="FILE",
        help="the requirements to install (default: requirements.txt here, "
        "else this library as installed)",
    )
    build.add_argument(
        "--extra",
        action="append",
        default=[],
        metavar="EXTRA",
        help="also this library's optional extra (repeatable; fc and crypto "
        "are always in, otel when an OTLP endpoint is set; default: no more); s.yaml "
        "passes RELAY_PUBLISHER",
    )
    build.add_argument(
        "--exclude",
        action="append",
        default=[],
        metavar="GLOB",
        help="leave out your files matching GLOB, relative to here (repeatable; default: "
        "none beyond venvs, build, dist, tests and docs)",
    )
    build.add_argument(
        "--local",
        action="store_true",
        help="build for this interpreter instead (to run the package here)",
    )
    build.set_defaults(run=run_build)

    preview = actions.add_parser(
        "preview",
        help="what `s deploy` would deploy, secrets hidden, and the environment's size",
        description="Render s.yaml with Serverless Devs' own `s preview -o json`, each "
        "secret replaced by its length before `s` sees it and masked again after, and check "
        "each function's environment variables, at their real lengths, against Function "
        "Compute's 4 KB. Never run `s preview` itself: it prints the secrets.",
    )
    preview.add_argument(
        "--template",
        type=Path,
        default=Path("s.yaml"),
        metavar="FILE",
        help="the Serverless Devs template (default: s.yaml here)",
    )
    preview.set_defaults(run=run_preview)


def run_init(args: argparse.Namespace, settings: Settings) -> int:
    from firestore_outbox.deploy.skeleton import init

    done = init(args.config, args.directory, nudge=args.nudge, force=args.force)
    for name in done.written:
        print(f"wrote {args.directory / name}")
    for name in done.skipped:
        print(f"kept {args.directory / name} (it exists; --force overwrites it)")
    return 0


def run_build(args: argparse.Namespace, settings: Settings) -> int:
    from firestore_outbox.deploy.build import build, extras_for
    from firestore_outbox.deploy.requirements import BuildFailed

    extras = extras_for(args.extra, args.config.environ)
    try:
        built = build(
            args.output,
            requirements=args.requirements,
            local=args.local,
            extras=extras,
            exclude=args.exclude,
        )
    except BuildFailed as exc:  # the `outbox` command's one error line, and its status 1
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for skipped in built.skipped:
        print(f"not checked: {skipped}")
    print(
        f"built {built.output}: {built.size / 1e6:.1f} MB (extras: {', '.join(extras)}; "
        f"your code: {', '.join(built.sources) or 'none'})"
    )
    return 0


def run_preview(args: argparse.Namespace, settings: Settings) -> int:
    from firestore_outbox.deploy.preview import preview

    return preview(args.template, args.config.environ)
