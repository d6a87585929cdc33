"""Deployment, checked offline: s.yaml as Serverless Devs renders it, and the package
`outbox fc build` makes of this repository (its requirements.txt: the library from this
checkout; `app/` and `function_compute/` as the code) run from a clean interpreter the way
Function Compute runs it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud import firestore

from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.deploy.build import FC_PYTHON, build
from firestore_outbox.deploy.checks import FC_GLIBC, glibc_versions_needed, python310
from firestore_outbox.firestore.settings import Settings
from tests.support.helpers import add_orders, outbox, relay_environment

ROOT = Path(__file__).resolve().parents[3]
FC_EVENT = {"triggerTime": "2026-11-21T08:00:00Z", "triggerName": "relay-timer", "payload": ""}
# What Function Compute's python runtime does, reduced: a clean interpreter (no site-packages,
# no user site, PYTHONPATH ignored), the code directory and PYTHONPATH on sys.path, the handler
# called with the timer's bytes and a context.
RUNNER = """
import json, sys, types
code, pythonpath, event = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path[:0] = [code, pythonpath]
import function_compute.relay_handler as module
import google.cloud.firestore as firestore
assert firestore.__file__.startswith(pythonpath), firestore.__file__
context = types.SimpleNamespace(
    request_id="fc-req-1", function=types.SimpleNamespace(timeout=90), credentials=None
)
module.initialize(context)
print(json.dumps(module.handler(event.encode(), context)))
"""


# What s.yaml's pre-deploy leaves out of this repository's code (a tool, not the function's).
EXCLUDE = ("app/order_counter.py",)


def build_repository(output: Path, *, local: bool) -> Path:
    """This repository built as s.yaml's pre-deploy builds it (`outbox fc build`)."""
    return build(output, source=ROOT, local=local, exclude=EXCLUDE).output


@pytest.fixture(scope="session")
def local_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_repository(tmp_path_factory.mktemp("package") / "fc", local=True)


ENTRY_POINT = """
import importlib, inspect, json, sys
package, dependencies, _event, module, function = sys.argv[1:]
sys.path[:0] = [package, dependencies]
entry = getattr(importlib.import_module(module), function)
print(json.dumps(list(inspect.signature(entry).parameters)))
"""


def entry_parameters(package: Path, module_path: str, function: str) -> list[str]:
    """The parameters of `module_path.function` (s.yaml's form, `dir/module.function`), as a
    clean interpreter with only the package on sys.path imports it."""
    module = module_path.replace("/", ".")
    parameters: list[str] = run_package(package, sys.executable, {}, ENTRY_POINT, module, function)
    return parameters


def run_package(
    package: Path, python: str, variables: dict[str, str], runner: str = RUNNER, *args: str
) -> Any:
    """Run `runner` (the handler, by default) in a clean interpreter with only the package on
    sys.path, given the package, its dependencies' folder, a timer event and `args`; the JSON
    of its last line."""
    info = json.loads((package / "build-info.json").read_text())
    dependencies = str(package / info["pythonpath"])
    command = [python, "-I", "-S", "-W", "ignore::FutureWarning", "-c", runner, str(package)]
    result = subprocess.run(
        [*command, dependencies, json.dumps(FC_EVENT), *args],
        env={"PATH": "/usr/bin:/bin", **variables},
        cwd=package,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_the_built_package_runs_the_handler_from_a_clean_interpreter(
    local_package: Path, db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    event_ids = add_orders(db, settings, 12)
    summary = run_package(local_package, sys.executable, relay_environment(settings, receiver.url))
    assert (summary["status"], summary["processed"], summary["trigger"]) == (
        "ok",
        12,
        "relay-timer",
    )
    assert sorted(r.event_id for r in receiver.received) == event_ids
    assert {e["processingInstanceId"] for e in outbox(db, settings).values()} == {"fc-req-1"}


@pytest.fixture(scope="session")
def fc_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_repository(tmp_path_factory.mktemp("package") / "fc", local=False)


def wheel_tags(package: Path) -> dict[str, list[str]]:
    """Each installed distribution that is not pure Python, with its wheel tags."""
    native = {}
    for wheel in (package / "python").glob("*.dist-info/WHEEL"):
        text = wheel.read_text()
        if "Root-Is-Purelib: false" in text:
            native[wheel.parent.name] = re.findall(r"^Tag: (\S+)$", text, re.MULTILINE)
    return native


def _manylinux_glibc(tag: str) -> tuple[int, int] | None:
    """The glibc a CPython 3.10 x86_64 wheel tag asks for (None: another Python or platform)."""
    legacy = {"1": (2, 5), "2010": (2, 12), "2014": (2, 17)}
    match = re.fullmatch(r"cp3(?:10|[0-9])-(?:cp310|abi3)-manylinux_?(\w+?)_x86_64", tag)
    if match is None:
        return None
    version = match.group(1)
    if version in legacy:
        return legacy[version]
    major, minor = version.split("_")
    return int(major), int(minor)


def test_the_function_compute_package_holds_cp310_manylinux_wheels(fc_package: Path) -> None:
    native = wheel_tags(fc_package)
    assert any(name.startswith("grpcio-") for name in native)
    assert any(name.startswith("pycurl-") for name in native)
    for name, tags in native.items():
        fits = [tag for tag in tags if (_manylinux_glibc(tag) or (9, 9)) <= FC_GLIBC]
        assert fits, f"{name} has no wheel for CPython 3.10 on glibc {FC_GLIBC}: {tags}"
    assert json.loads((fc_package / "build-info.json").read_text())["python"] == FC_PYTHON
    assert (fc_package / "function_compute" / "relay_handler.py").is_file()


def test_the_packages_native_libraries_load_on_the_runtimes_glibc(fc_package: Path) -> None:
    # What the dynamic loader of Function Compute's python3.10 (glibc 2.28) checks before it
    # loads a library: every glibc symbol version it needs. pycurl brings its own libcurl.
    if shutil.which("readelf") is None:
        pytest.skip("no readelf (binutils) on this machine")
    libraries = sorted((fc_package / "python").rglob("*.so*"))
    curl = [p for p in libraries if p.parent.name == "pycurl.libs" and "libcurl" in p.name]
    assert curl, "pycurl's wheel brings no libcurl of its own"
    too_new = {
        str(library.relative_to(fc_package)): max(needed)
        for library in libraries
        if (needed := glibc_versions_needed(library)) and max(needed) > FC_GLIBC
    }
    assert too_new == {}, f"needing a glibc newer than {FC_GLIBC}"


def test_the_function_compute_package_runs_on_python_3_10(
    fc_package: Path, db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    python = python310()
    if python is None:
        pytest.skip("no python3.10 on this machine to run the Function Compute package with")
    event_ids = add_orders(db, settings, 5)
    summary = run_package(fc_package, python, relay_environment(settings, receiver.url))
    assert (summary["status"], summary["processed"]) == ("ok", 5)
    assert sorted(r.event_id for r in receiver.received) == event_ids


@pytest.fixture(scope="module")
def rendered(
    tmp_path_factory: pytest.TempPathFactory, key_info: dict[str, Any]
) -> Iterator[dict[str, Any]]:
    """s.yaml rendered by Serverless Devs' own CLI (`s preview -o json`), offline."""
    s = os.environ.get("SERVERLESS_DEVS_BIN") or shutil.which("s")
    if not s:
        pytest.skip("Serverless Devs' `s` is not installed (.ci/run installs it with npm)")
    work = tmp_path_factory.mktemp("s")
    shutil.copy(ROOT / "s.yaml", work / "s.yaml")  # away from any .env file, which s reads
    home = work / "home"
    home.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(home),
        "SERVERLESS_DEVS_CICD": "1",  # no update check, no root warning on stdout
        "FIRESTORE_PROJECT_ID": "shop-prod",
        # A real-sized service-account key (2048-bit), as compact JSON.
        "FIRESTORE_CREDENTIALS_JSON": json.dumps(key_info, separators=(",", ":")),
        "DOWNSTREAM_SERVICE_URL": "https://consumer.example.com/events",
        "RELAY_PARTITIONS": "32",
    }
    result = subprocess.run(
        [s, "preview", "-o", "json", "-t", "s.yaml"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    yield json.loads(result.stdout)


def test_s_yaml_renders_to_a_python310_function_with_a_timer(
    rendered: dict[str, Any], local_package: Path
) -> None:
    assert rendered["edition"].startswith("3.")
    relay = rendered["resources"]["relay"]
    props = relay["props"]
    assert relay["component"] == "fc3" and props["runtime"] == "python3.10"
    # Each entry point, imported from the package as Function Compute imports it: a callable
    # taking (event, context), or (context) for the initializer.
    for entry, parameters in (("handler", ["event", "context"]), ("initializer", ["context"])):
        module_path, _, function = props[entry].rpartition(".")
        assert entry_parameters(local_package, module_path, function) == parameters, entry
    [trigger] = props["triggers"]
    assert trigger["triggerType"] == "timer"
    assert trigger["triggerConfig"]["cronExpression"] == "@every 1m"
    assert trigger["triggerConfig"]["enable"] is True
    memory, timeout = props["memorySize"], props["timeout"]
    assert 128 <= memory <= 32768 and memory % 64 == 0
    env = props["environmentVariables"]
    budget = float(env["RELAY_TIME_BUDGET_SECONDS"]) + float(env["RELAY_FIRESTORE_TIMEOUT_SECONDS"])
    assert budget < timeout <= 86400
    assert (
        env["PYTHONPATH"]
        == "/code/" + json.loads((local_package / "build-info.json").read_text())["pythonpath"]
    )
    assert env["DOWNSTREAM_SERVICE_URL"] == "https://consumer.example.com/events"
    # Function Compute refuses more than 4 KB of environment variables in all.
    assert sum(len(name) + len(str(value)) for name, value in env.items()) < 4096
    assert props["code"] == "./build/fc"
    pre_deploy = relay["actions"]["pre-deploy"][0]["run"]
    assert pre_deploy.startswith("outbox fc build --output build/fc")
    assert all(f"--exclude {path}" in pre_deploy for path in EXCLUDE)


def test_the_api_function_writes_events_in_the_relays_partitions(
    rendered: dict[str, Any],
) -> None:
    """The api function writes outbox events: its partition count is the relay's."""
    functions = rendered["resources"]
    counts = {name: functions[name]["props"]["environmentVariables"] for name in ("relay", "api")}
    assert {name: env.get("RELAY_PARTITIONS") for name, env in counts.items()} == {
        "relay": "32",
        "api": "32",
    }


def test_every_variable_s_yaml_reads_is_documented() -> None:
    text = (ROOT / "s.yaml").read_text()
    names = set(re.findall(r"\$\{env\('([A-Z0-9_]+)'", text))
    assert {"FIRESTORE_CREDENTIALS_JSON", "DOWNSTREAM_SERVICE_URL"} <= names
    example = (ROOT / "credentials.example").read_text()
    for name in names:
        assert re.search(rf"^#? ?{name}=", example, re.MULTILINE), f"{name} not in example"
    for line in text.splitlines():
        key, _, value = line.strip().partition(":")
        if re.fullmatch(r"[A-Z0-9_]*(SECRET|TOKEN|JSON|PASSWORD)[A-Z0-9_]*", key):
            assert value.strip().startswith("${env("), f"a literal secret? {line}"


# The dev and operator tools, and what only they import: none may be in the package, and the
# handler must run without them.
TOOLS = (
    "firestore_outbox.cli",
    "app.demo",
    "firestore_outbox.testing.emulator",
    "firestore_outbox.consumer.receiver",
    "firestore_outbox.testing.metering",
    "cloudevents",
)
TOOLS_RUNNER = """
import importlib.util, json, sys, types
code, pythonpath, event, tools = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
sys.path[:0] = [code, pythonpath]
import function_compute.relay_handler as module
context = types.SimpleNamespace(request_id="fc-req-2", function=types.SimpleNamespace(timeout=90))
summary = module.handler(event.encode(), context)
def present(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # its package is not there either
        return False
findable = [name for name in tools if present(name)]
loaded = sorted(name for name in sys.modules if name.startswith(tuple(tools)))
print(json.dumps({"summary": summary, "findable": findable, "loaded": loaded}))
"""


def test_the_package_holds_only_what_the_relay_runs(
    local_package: Path, db: firestore.Client, settings: Settings, receiver: Receiver
) -> None:
    # The library is installed among the dependencies (python/), the code at the top.
    files = {
        p.relative_to(local_package).as_posix().removeprefix("python/")
        for p in local_package.rglob("*.py")
    }
    ours = {f for f in files if f.startswith(("firestore_outbox/", "app/", "function_compute/"))}
    assert "function_compute/relay_handler.py" in ours
    assert "firestore_outbox/relay/run/relay.py" in ours
    for left_out in (
        "firestore_outbox/cli/__init__.py",
        "app/demo.py",
        "firestore_outbox/testing/emulator.py",
        "firestore_outbox/consumer/receiver.py",
    ):
        assert left_out not in ours
    assert (
        not {
            "firestore_outbox/testing/metering.py",
            "app/order_counter.py",
            "firestore_outbox/deploy/build.py",
        }
        & ours
    )
    dists = {p.name.split("-")[0].lower() for p in (local_package / "python").glob("*.dist-info")}
    assert "cloudevents" not in dists and "google_cloud_firestore" in dists

    event_ids = add_orders(db, settings, 3)
    variables = relay_environment(settings, receiver.url)
    report = run_package(local_package, sys.executable, variables, TOOLS_RUNNER, ",".join(TOOLS))
    assert (report["summary"]["status"], report["summary"]["processed"]) == ("ok", 3)
    assert sorted(r.event_id for r in receiver.received) == event_ids
    assert report["findable"] == [] and report["loaded"] == []


def test_the_watchdog_is_a_function_of_its_own_with_its_own_timer(
    rendered: dict[str, Any], local_package: Path
) -> None:
    relay, watchdog = rendered["resources"]["relay"]["props"], rendered["resources"]["watchdog"]
    props = watchdog["props"]
    assert watchdog["component"] == "fc3" and props["runtime"] == "python3.10"
    assert props["functionName"] != relay["functionName"]
    module_path, _, function = props["handler"].rpartition(".")
    assert entry_parameters(local_package, module_path, function) == ["event", "context"]
    [trigger] = props["triggers"]
    assert (trigger["triggerType"], trigger["triggerConfig"]["enable"]) == ("timer", True)
    # A small budget of its own: less time and memory than the relay's.
    assert props["timeout"] < relay["timeout"] and props["memorySize"] <= relay["memorySize"]
    env = props["environmentVariables"]
    assert env["RELAY_PARTITIONS"] == relay["environmentVariables"]["RELAY_PARTITIONS"]
    assert "DOWNSTREAM_SERVICE_URL" not in env  # it needs no downstream
    # It reads the collections its relay writes: the same outbox, and the heartbeats and
    # leases named after it (an empty value is unset) unless the deployer sets them.
    for name in ("OUTBOX_COLLECTION", "OUTBOX_HEALTH_COLLECTION", "RELAY_PARTITION_COLLECTION"):
        assert (env.get(name) or None) == (relay["environmentVariables"].get(name) or None), name


WATCHDOG_RUNNER = """
import json, sys, types
code, pythonpath, event = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path[:0] = [code, pythonpath]
import function_compute.watchdog_handler as module
report = module.handler(event.encode(), types.SimpleNamespace(request_id="fc-wd-1"))
heavy = sorted(m for m in sys.modules if m == "firestore_outbox.relay.run.relay")
print(json.dumps({"report": report, "heavy": heavy}))
"""


def test_the_built_package_runs_the_watchdog_from_a_clean_interpreter(
    local_package: Path, settings: Settings
) -> None:
    variables = {
        "FIRESTORE_EMULATOR_HOST": str(settings.emulator_host),
        "FIRESTORE_PROJECT_ID": str(settings.project_id),
    }
    ran = run_package(local_package, sys.executable, variables, WATCHDOG_RUNNER)
    # No relay ran on this emulator: the watchdog says so, without the relay's core loaded.
    assert [p["code"] for p in ran["report"]["problems"]] == ["relay_stopped"]
    assert ran["heavy"] == []
