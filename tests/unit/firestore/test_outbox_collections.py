"""The outbox's own collections are named after `OUTBOX_COLLECTION` by one rule, unchanged for
`outbox`, an explicit variable wins, and every component of one configuration uses the same
names (the relay, the watchdog, the console, re-drive)."""

from __future__ import annotations

import re

import pytest

from firestore_outbox import ConfigError, Configuration, Relay, RelayConfig
from firestore_outbox.config.wiring import make_watchdog
from firestore_outbox.console import make_console
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.limits import MAX_NAME_BYTES
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.health.settings import WatchdogSettings
from firestore_outbox.health.watchdog import Watchdog
from firestore_outbox.publishers import HttpSettings
from firestore_outbox.redrive.service import Redrive, jobs_collection
from firestore_outbox.relay import OutboxCollections

# Nothing listens here: building the components makes no call.
EMULATOR = {"FIRESTORE_EMULATOR_HOST": "127.0.0.1:9", "FIRESTORE_PROJECT_ID": "outbox-test"}


def test_for_the_default_outbox_the_names_are_those_of_before() -> None:
    assert Configuration.load({}).collections.names() == {
        "outbox": "outbox",
        "partitions": "outbox_partitions",
        "partition_modes": "outbox_partitions_mode",
        "health": "outbox_health",
        "redrive": "outbox_redrive",
    }


def test_another_outbox_gets_collections_named_after_it() -> None:
    collections = Configuration.load({"OUTBOX_COLLECTION": "billing"}).collections
    assert collections == OutboxCollections.of("billing")
    assert list(collections.names().values()) == [
        "billing",
        "billing_partitions",
        "billing_partitions_mode",
        "billing_health",
        "billing_redrive",
    ]
    assert jobs_collection("billing") == collections.redrive


def test_an_explicit_variable_wins() -> None:
    environ = {
        "OUTBOX_COLLECTION": "billing",
        "RELAY_PARTITION_COLLECTION": "outbox_partitions",
        "OUTBOX_HEALTH_COLLECTION": "outbox_health",
    }
    collections = Configuration.load(environ).collections
    assert (collections.partitions, collections.partition_modes, collections.health) == (
        "outbox_partitions",
        "outbox_partitions_mode",
        "outbox_health",
    )
    assert collections.redrive == "billing_redrive"  # no variable of its own


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"RELAY_PARTITION_COLLECTION": "a/b"}, "RELAY_PARTITION_COLLECTION"),
        ({"OUTBOX_HEALTH_COLLECTION": "__x__"}, "OUTBOX_HEALTH_COLLECTION"),
        # Valid on its own, too long once `_partitions` is added.
        ({"OUTBOX_COLLECTION": "o" * MAX_NAME_BYTES}, "OUTBOX_COLLECTION + _partitions"),
        # The leases among the events, the heartbeats among the leases.
        ({"RELAY_PARTITION_COLLECTION": "outbox"}, "outbox and partitions are both 'outbox'"),
        (
            {"OUTBOX_HEALTH_COLLECTION": "outbox_partitions"},
            "partitions and health are both 'outbox_partitions'",
        ),
    ],
)
def test_a_bad_name_is_refused_naming_its_variable(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(named)):
        _ = Configuration.load(environ).collections


def test_the_names_need_no_other_setting_of_the_relay_or_the_watchdog() -> None:
    # `outbox status` reads them: a bad webhook URL or lease mode is not its business.
    environ = {"WATCHDOG_WEBHOOK_URL": "not a url", "RELAY_LEASES": "bogus"}
    assert Configuration.load(environ).collections == OutboxCollections.of("outbox")


def test_every_component_of_one_configuration_uses_the_same_collections() -> None:
    config = Configuration.load(
        {
            **EMULATOR,
            "OUTBOX_COLLECTION": "billing",
            "OUTBOX_HEALTH_COLLECTION": "billing_beats",
            "DOWNSTREAM_SERVICE_URL": "http://127.0.0.1:9/events",
        }
    )
    expected = config.collections
    assert expected.health == "billing_beats" and expected.partitions == "billing_partitions"
    db = get_db_client(config.settings)
    assert Relay(db, config.settings, config.relay()).collections == expected
    assert make_watchdog(config, db).collections == expected
    assert Redrive(db, config.settings, config.relay()).jobs.collection.id == expected.redrive
    console = make_console(
        db,
        config.settings,
        token=None,
        secrets=[],
        partition_collection=expected.partitions,
        health_collection=expected.health,
    )
    assert console.ctx.collections == expected


def test_settings_built_in_code_derive_the_names_from_their_outbox() -> None:
    settings = Settings(emulator_host="127.0.0.1:9", project_id="outbox-test")
    billing = Settings(
        emulator_host="127.0.0.1:9", project_id="outbox-test", outbox_collection="billing"
    )
    config = RelayConfig(publisher=HttpSettings(url="http://127.0.0.1:9/events"))
    db = get_db_client(settings)
    assert Relay(db, settings, config).collections == OutboxCollections.of("outbox")
    assert Relay(db, billing, config).collections == OutboxCollections.of("billing")
    console = make_console(db, billing, token=None, secrets=[])
    assert console.ctx.collections == OutboxCollections.of("billing")
    watchdog = Watchdog(db, billing, WatchdogSettings(), partitions=16, lock_timeout_seconds=300)
    assert watchdog.collections == OutboxCollections.of("billing")
