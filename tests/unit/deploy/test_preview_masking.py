"""`outbox fc preview` hides every secret from `s` and from the screen: the library's secret
variables and any variable the template reads whose name says it is a secret (a team's own,
or one added after this version). A stand-in `s` prints the environment it was given."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from firestore_outbox.deploy.preview import FC_ENVIRONMENT_LIMIT_BYTES, preview
from firestore_outbox.masking import spellings

TEMPLATE = """edition: 3.0.0
resources:
  relay:
    props:
      environmentVariables:
        FIRESTORE_CREDENTIALS_JSON: ${env('FIRESTORE_CREDENTIALS_JSON')}
        PARTNER_API_TOKEN: ${env('PARTNER_API_TOKEN')}
        OUTBOX_NUDGE_SECRET: ${env('OUTBOX_NUDGE_SECRET')}
        DOWNSTREAM_SERVICE_URL: ${env('DOWNSTREAM_SERVICE_URL')}
        FIRESTORE_PROJECT_ID: ${env('FIRESTORE_PROJECT_ID')}
"""
# Renders what `s preview -o json` would, from its own environment, and leaks that whole
# environment on stderr too, as a careless tool might.
FAKE_S = """#!{python}
import json, os, re, sys
text = open(sys.argv[-1]).read()
names = re.findall(r"env\\('([A-Z_]+)'", text)
print(json.dumps({{"resources": {{"relay": {{"props": {{"environmentVariables":
    {{n: os.environ.get(n, "") for n in names}}}}}}}}}}))
print(" ".join(os.environ.values()), file=sys.stderr)
"""
SECRETS = {
    "FIRESTORE_CREDENTIALS_JSON": '{"private_key":"-----BEGIN PRIVATE KEY-----\\nMIIEv4key"}',
    "PARTNER_API_TOKEN": "partner-token-0123456789",
    "OUTBOX_NUDGE_SECRET": "whsec_bnVkZ2Utc2VjcmV0LXZhbHVlLTAx",
}
URL_TOKEN = "url-token-abcdefghijklmnop"


@pytest.fixture
def fake_s(tmp_path: Path) -> str:
    s = tmp_path / "s"
    s.write_text(FAKE_S.format(python=sys.executable))
    s.chmod(s.stat().st_mode | stat.S_IXUSR)
    return str(s)


def test_no_secret_reaches_s_or_the_screen(
    tmp_path: Path, fake_s: str, capsys: pytest.CaptureFixture[str]
) -> None:
    template = tmp_path / "s.yaml"
    template.write_text(TEMPLATE)
    environ = {
        **SECRETS,
        "DOWNSTREAM_SERVICE_URL": f"https://consumer.example/events?token={URL_TOKEN}",
        "FIRESTORE_PROJECT_ID": "shop-prod",
        "SERVERLESS_DEVS_BIN": fake_s,
        "PATH": os.environ["PATH"],
    }

    assert preview(template, environ) == 0

    out, err = capsys.readouterr()
    for secret in (*SECRETS.values(), URL_TOKEN, "MIIEv4key"):
        for spelling in spellings(secret):
            assert spelling not in out + err, f"shown: {spelling[:10]}..."
    variables = json.loads(out)["resources"]["relay"]["props"]["environmentVariables"]
    for name, value in SECRETS.items():
        assert variables[name] == f"<hidden: {len(value)} characters>", name
    assert variables["FIRESTORE_PROJECT_ID"] == "shop-prod"
    # The size counts the real values, not the placeholders.
    real = sum(len(k) + len(v) for k, v in environ.items() if k in variables)
    [line] = [x for x in err.splitlines() if x.startswith("environment variables:")]
    assert line.split()[2] == str(real) and real < FC_ENVIRONMENT_LIMIT_BYTES


def test_an_environment_over_4_kb_fails(tmp_path: Path, fake_s: str) -> None:
    template = tmp_path / "s.yaml"
    template.write_text(TEMPLATE)
    environ = {"PARTNER_API_TOKEN": "x" * 5000, "SERVERLESS_DEVS_BIN": fake_s}
    assert preview(template, environ) == 1
