"""`outbox fc init`: the skeleton for a team's repository. It keeps existing files unless
forced, takes every collection name from the loaded configuration, and never writes a secret
into s.yaml."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from firestore_outbox import Configuration
from firestore_outbox.cli import main
from firestore_outbox.deploy.skeleton import CollectionNames, indexes, init, rules, skeleton

ROOT = Path(__file__).resolve().parents[3]
SECRET_KEY = re.compile(r"[A-Z0-9_]*(SECRET|TOKEN|JSON|PASSWORD|KEYS?|URL)[A-Z0-9_]*")


def test_init_writes_every_file_and_keeps_existing_ones_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no .env of the checkout's
    (tmp_path / "team").mkdir()
    (tmp_path / "team" / "index.py").write_text("# ours\n")

    assert main(["fc", "init", "team"]) == 0

    out = capsys.readouterr().out
    assert "kept team/index.py (it exists; --force overwrites it)" in out
    assert (tmp_path / "team" / "index.py").read_text() == "# ours\n"
    written = {p.name for p in (tmp_path / "team").iterdir()}
    assert written == {
        "index.py",
        "s.yaml",
        "firestore.indexes.json",
        "firestore.rules",
        "credentials.example",
        "requirements.txt",
    }
    before = (tmp_path / "team" / "s.yaml").read_text()
    (tmp_path / "team" / "s.yaml").write_text("edited\n")
    assert main(["fc", "init", "team"]) == 0
    assert (tmp_path / "team" / "s.yaml").read_text() == "edited\n"

    assert main(["fc", "init", "team", "--force"]) == 0
    assert (tmp_path / "team" / "s.yaml").read_text() == before
    assert (
        "from firestore_outbox.function_compute import"
        in (tmp_path / "team" / "index.py").read_text()
    )


def test_the_names_come_from_the_configuration(tmp_path: Path) -> None:
    config = Configuration.load(
        {
            "OUTBOX_COLLECTION": "billing_outbox",
            "ORDERS_COLLECTION": "invoices",
            "RELAY_PARTITION_COLLECTION": "billing_partitions",
            "OUTBOX_HEALTH_COLLECTION": "billing_health",
            "INBOX_COLLECTION": "billing_inbox",
            "IDEMPOTENCY_COLLECTION": "billing_keys",
            "RELAY_PARTITIONS": "32",
        }
    )
    names = CollectionNames.configured(config)
    # Each read from the configuration's own settings objects, whatever rule derives it.
    assert names == CollectionNames(
        outbox="billing_outbox",
        orders="invoices",
        partitions="billing_partitions",
        partition_modes="billing_partitions_mode",
        health="billing_health",
        redrive="billing_outbox_redrive",
        inbox="billing_inbox",
        idempotency="billing_keys",
    )
    done = init(config, tmp_path)
    assert done.skipped == []
    definitions = json.loads((tmp_path / "firestore.indexes.json").read_text())
    groups = {e["collectionGroup"] for e in definitions["indexes"] + definitions["fieldOverrides"]}
    assert groups == {"billing_outbox"}
    matched = re.findall(r"match /(\w+)/\{documentId\}", (tmp_path / "firestore.rules").read_text())
    assert sorted(matched) == sorted(dict(names.described()))
    template = (tmp_path / "s.yaml").read_text()
    assert "${env('OUTBOX_COLLECTION', 'billing_outbox')}" in template
    assert "${env('RELAY_PARTITIONS', '32')}" in template
    assert "OUTBOX_COLLECTION=billing_outbox" in (tmp_path / "credentials.example").read_text()
    assert "outbox_partitions" not in (tmp_path / "firestore.rules").read_text()


def test_the_outboxs_own_collections_are_named_after_it_when_not_set() -> None:
    names = CollectionNames.configured(Configuration.load({"OUTBOX_COLLECTION": "billing"}))
    assert (names.partitions, names.partition_modes, names.health, names.redrive) == (
        "billing_partitions",
        "billing_partitions_mode",
        "billing_health",
        "billing_redrive",
    )


def test_this_repositorys_firestore_files_are_the_generated_ones_for_the_defaults() -> None:
    names = CollectionNames.configured(Configuration.load({}))
    assert json.loads((ROOT / "firestore.indexes.json").read_text()) == indexes(names)
    assert (ROOT / "firestore.rules").read_text() == rules(names)


@pytest.mark.parametrize("nudge", ["off", "http"])
def test_s_yaml_holds_no_secret_only_references(nudge: str) -> None:
    environ = {
        "FIRESTORE_CREDENTIALS_JSON": '{"private_key": "-----BEGIN PRIVATE KEY-----abc"}',
        "RELAY_SIGNING_SECRET": "whsec_c2lnbmluZy1zZWNyZXQ=",
        "OUTBOX_NUDGE_SECRET": "whsec_bnVkZ2Utc2VjcmV0LXZhbHVl",
        "DOWNSTREAM_SERVICE_URL": "https://consumer.example/e?token=tok3n-secret-value",
    }
    files = skeleton(Configuration.load(environ), name="team", nudge=nudge)
    template = files["s.yaml"]
    for text in files.values():
        for value in (*environ.values(), "tok3n-secret-value", "BEGIN PRIVATE KEY"):
            assert value not in text
    for line in template.splitlines():
        key, _, value = line.strip().partition(":")
        if SECRET_KEY.fullmatch(key):
            assert value.strip().startswith("${env("), f"not a reference: {line}"
    # Every variable s.yaml reads is in credentials.example, commented out or set.
    example = files["credentials.example"]
    for name in set(re.findall(r"\$\{env\('([A-Z0-9_]+)'", template)):
        assert re.search(rf"^#? ?{name}=", example, re.MULTILINE), name
    http = "index.http_handler" in template
    assert http == (nudge == "http") == ("http_handler" in files["index.py"])
    if http:
        assert "OUTBOX_NUDGE_SECRET: ${env('OUTBOX_NUDGE_SECRET')}" in template
        assert "triggerType: http" in template


def test_an_unknown_nudge_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nudge must be one of off, http"):
        init(Configuration.load({}), tmp_path, nudge="fc3")
    assert list(tmp_path.iterdir()) == []


def test_a_bad_collection_name_is_named_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OUTBOX_COLLECTION", "bad/name")
    assert main(["fc", "init", "team"]) == 2
    assert "OUTBOX_COLLECTION" in capsys.readouterr().err
    assert not (tmp_path / "team").exists()
