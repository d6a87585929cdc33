"""The documented deploy preview (`outbox fc preview`) renders this repository's s.yaml with
Serverless Devs' own `s`, and no part of the private key, the signing secret or the
downstream URL's token ever appears on stdout or stderr.

Before, the README recommended `s preview`, which prints FIRESTORE_CREDENTIALS_JSON whole."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from firestore_outbox.masking import spellings

ROOT = Path(__file__).resolve().parents[3]
# The `outbox` command of the interpreter running the tests.
OUTBOX_FC_PREVIEW = [str(Path(sys.executable).parent / "outbox"), "fc", "preview"]
SIGNING_SECRET = "whsec_" + "c2lnbmluZy1zZWNyZXQtZm9yLXRlc3Rz"
URL_TOKEN = "tok3n-abcdefghijklmnopqrstuvwxyz"


def serverless_devs() -> str:
    s = os.environ.get("SERVERLESS_DEVS_BIN") or shutil.which("s")
    local = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "s"
    if not s and local.exists():
        s = str(local)
    if not s:
        pytest.skip("Serverless Devs' `s` is not installed (.ci/run installs it with npm)")
    return s


def preview(
    work: Path, variables: dict[str, str], s: str | None
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], "HOME": str(work / "home"), **variables}
    if s:
        env["SERVERLESS_DEVS_BIN"] = s
    return subprocess.run(
        OUTBOX_FC_PREVIEW,
        env={**env, "PYTHONPATH": str(ROOT)},
        cwd=work,
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture
def work(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "s.yaml", tmp_path / "s.yaml")
    (tmp_path / "home").mkdir()
    return tmp_path


@pytest.mark.parametrize("where", ["environment", "dotenv"])
def test_the_preview_renders_s_yaml_and_never_shows_a_secret(
    work: Path, key_info: dict[str, Any], where: str
) -> None:
    s = serverless_devs()
    key_json = json.dumps(key_info, separators=(",", ":"))
    secrets = {
        "FIRESTORE_CREDENTIALS_JSON": key_json,
        "RELAY_SIGNING_SECRET": SIGNING_SECRET,
        "DOWNSTREAM_SERVICE_URL": f"https://consumer.example.com/events?token={URL_TOKEN}",
    }
    variables = {"FIRESTORE_PROJECT_ID": "shop-prod"}
    if where == "environment":
        variables.update(secrets)
    else:  # in ./.env, which both our loader and `s` read
        (work / ".env").write_text("".join(f"{k}='{v}'\n" for k, v in secrets.items()))

    done = preview(work, variables, s)

    assert done.returncode == 0, done.stderr
    shown = done.stdout + done.stderr
    private_key = key_info["private_key"]
    body_lines = [line for line in private_key.splitlines() if "-----" not in line]
    for secret in (private_key, *body_lines, key_info["private_key_id"], SIGNING_SECRET, URL_TOKEN):
        for spelling in spellings(secret):
            assert spelling not in shown, f"a secret reached the screen: {spelling[:12]}..."
    rendered = json.loads(done.stdout)
    env = rendered["resources"]["relay"]["props"]["environmentVariables"]
    assert env["FIRESTORE_CREDENTIALS_JSON"] == f"<hidden: {len(key_json)} characters>"
    assert env["RELAY_SIGNING_SECRET"] == f"<hidden: {len(SIGNING_SECRET)} characters>"
    assert env["FIRESTORE_PROJECT_ID"] == "shop-prod"  # the rest is rendered as it is
    assert URL_TOKEN not in env["DOWNSTREAM_SERVICE_URL"]  # its secret parts masked
    # The size check counts the real values: a 2048-bit key fits Function Compute's 4 KB.
    [line] = [x for x in done.stderr.splitlines() if x.startswith("environment variables:")]
    size = int(line.split()[2])
    assert len(key_json) < size < 4096


def test_the_preview_without_s_is_one_error_line(work: Path) -> None:
    env = {"PATH": "/nonexistent", "HOME": str(work / "home"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        OUTBOX_FC_PREVIEW,
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "error: Serverless Devs' `s` is not installed: npm install -g @serverless-devs/s"
    ]


def test_the_preview_hides_the_amqp_url_and_the_otlp_endpoints(work: Path) -> None:
    """The broker URL's password and ARMS' token reach neither `s` nor the screen, once their
    lines in s.yaml are uncommented as the README says."""
    s = serverless_devs()
    template = work / "s.yaml"
    names = ("RELAY_AMQP_URL", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_HEADERS")
    text = template.read_text()
    for name in names:
        text = text.replace(f"# {name}: ", f"{name}: ")
    template.write_text(text)
    password, token = "amqp-pa55word-abcdefgh", "adapt_abcdefghij0123456789"
    variables = {
        "FIRESTORE_PROJECT_ID": "shop-prod",
        "FIRESTORE_CREDENTIALS_JSON": "{}",
        "RELAY_PUBLISHER": "amqp",
        "RELAY_AMQP_URL": f"amqps://amqpuser:{password}@broker.example.com:5671/orders",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://arms.example/{token}/api/otlp/traces",
        "OTEL_EXPORTER_OTLP_HEADERS": "x-arms-token=arms-header-secret-123",
    }

    done = preview(work, variables, s)

    assert done.returncode == 0, done.stderr
    for secret in (password, token, "arms-header-secret-123"):
        assert secret not in done.stdout + done.stderr
    env = json.loads(done.stdout)["resources"]["relay"]["props"]["environmentVariables"]
    for name in names:
        assert env[name] == f"<hidden: {len(variables[name])} characters>", name


def test_the_preview_hides_the_watchdogs_webhook_url_and_secret(work: Path) -> None:
    """A robot's URL carries its access token and its secret signs: neither reaches `s` nor
    the screen, and the watchdog function is rendered with them hidden."""
    s = serverless_devs()
    token, secret = "dingtalk-access-token-0123456789", "SECwatchdog-signing-secret-9876543"
    variables = {
        "FIRESTORE_PROJECT_ID": "shop-prod",
        "FIRESTORE_CREDENTIALS_JSON": "{}",
        "WATCHDOG_WEBHOOK_URL": f"https://oapi.dingtalk.com/robot/send?access_token={token}",
        "WATCHDOG_WEBHOOK_FORMAT": "dingtalk",
        "WATCHDOG_WEBHOOK_SECRET": secret,
    }
    done = preview(work, variables, s)
    assert done.returncode == 0, done.stderr
    for value in (token, secret):
        for spelling in spellings(value):
            assert spelling not in done.stdout + done.stderr, f"shown: {spelling[:12]}..."
    env = json.loads(done.stdout)["resources"]["watchdog"]["props"]["environmentVariables"]
    assert env["WATCHDOG_WEBHOOK_SECRET"] == f"<hidden: {len(secret)} characters>"
    assert env["WATCHDOG_WEBHOOK_URL"].startswith("<hidden: ")
    assert env["WATCHDOG_WEBHOOK_FORMAT"] == "dingtalk"
