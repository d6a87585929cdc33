"""The composition root (`firestore_outbox.config`): it reads the environment once per process
and builds every object from one `Configuration`; the folders below never import it, and a
writer given no settings reads no environment per unit of work."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import pytest

from firestore_outbox import edge
from firestore_outbox.config import loader, shortcuts
from firestore_outbox.config.loader import Configuration
from firestore_outbox.config.wiring import (
    ProcessDrain,
    build_front_door,
    build_relay,
    build_responder,
    make_watchdog,
)
from firestore_outbox.consumer import receiver_settings
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.idempotency import config as idempotency_config
from firestore_outbox.nudge.process import ProcessNudge
from firestore_outbox.nudge.targets import build_target
from firestore_outbox.producer import FirestoreUnitOfWork, defaults
from firestore_outbox.relay import config as relay_config

ENVIRON = {
    "FIRESTORE_PROJECT_ID": "root-test",
    "FIRESTORE_EMULATOR_HOST": "localhost:1",  # nothing is contacted: no call is made
    "DOWNSTREAM_SERVICE_URL": "http://downstream.test/events",
    "OUTBOX_COLLECTION": "root_outbox",
    "RELAY_PARTITIONS": "8",
    "RELAY_MAX_ATTEMPTS": "7",
    "OUTBOX_NUDGE": "process",
}


@pytest.fixture
def environment_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many times the environment (os.environ over ./.env) was read."""
    reads = [0]
    real = loader.read_environment

    def counting() -> object:
        reads[0] += 1
        return real()

    monkeypatch.setattr(loader, "read_environment", counting)
    for name, value in ENVIRON.items():
        monkeypatch.setenv(name, value)
    yield reads


def test_the_root_builds_each_object_from_one_configuration() -> None:
    configuration = Configuration.load(ENVIRON)
    relay = build_relay(configuration)
    with relay:
        assert relay.config == configuration.relay()
        assert relay.config.max_attempts == 7
        assert relay.collections == configuration.relay().collections("root_outbox")
    watchdog = make_watchdog(configuration)
    assert watchdog.collections == configuration.collections
    assert watchdog.collections.outbox == "root_outbox"
    nudge = configuration.nudge()
    assert nudge.drain == ProcessDrain(configuration.relay())
    db = get_db_client(configuration.settings)
    target = build_target(nudge, db, configuration.settings)
    assert isinstance(target, ProcessNudge)
    target.close()
    _, settings, idempotency = build_front_door(configuration, lambda *parts: parts)
    assert (settings, idempotency) == (configuration.settings, configuration.idempotency())
    _, receiver = build_responder(configuration, lambda *parts: parts, verify_signatures=False)
    assert receiver == configuration.receiver(verify_signatures=False)


def test_a_unit_of_work_given_no_settings_reads_the_environment_once_per_process(
    environment_reads: list[int],
) -> None:
    db = get_db_client(Settings(project_id="root-test", emulator_host="localhost:1"))
    partitions = set()
    for n in range(100):
        uow = FirestoreUnitOfWork(db, nudger=False)
        uow.outbox.add(
            {"eventType": "E", "aggregateType": "a", "aggregateId": f"a-{n}", "payload": {}}
        )
        assert uow.settings.outbox_collection == "root_outbox"
        partitions |= {write.data["partition"] for write in uow._writes}
    assert environment_reads[0] == 1
    assert partitions <= set(range(8))  # RELAY_PARTITIONS=8, from that one read
    assert len(partitions) > 1


def test_the_lower_folders_conveniences_ask_the_root_through_the_edge(
    environment_reads: list[int],
) -> None:
    # defined beside what they load, and the very functions the root's shortcuts are
    assert relay_config.load_relay_config() == Configuration.load(ENVIRON).relay()
    assert relay_config.load_relay_config is shortcuts.load_relay_config
    assert receiver_settings.load_receiver_config is shortcuts.load_receiver_config
    assert idempotency_config.load_idempotency_config is shortcuts.load_idempotency_config
    assert defaults.get_db_client is shortcuts.get_db_client
    assert defaults.nudger_for is shortcuts.nudger_for
    assert edge.default() is Configuration.default()
    assert environment_reads[0] == 2  # the loader's read, and the process's one


def test_configuration_from_the_relay_face_still_works_with_a_warning() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from firestore_outbox.relay import Configuration as old

    assert old is Configuration
    # (the import system looks the name up twice in a package: each lookup warns)
    assert caught and {w.category for w in caught} == {DeprecationWarning}
    assert "firestore_outbox.Configuration" in str(caught[0].message)


def test_a_writers_nudger_is_found_without_building_its_settings_again(
    environment_reads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # OUTBOX_NUDGE=process: the nudge's settings carry the whole relay configuration, which
    # every commit asked for again (about 50 us a commit) before the configuration kept them.
    built = [0]
    real = relay_config.RelayConfig.from_environment

    def counting(*args: object, **kwargs: object) -> relay_config.RelayConfig:
        built[0] += 1
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(relay_config.RelayConfig, "from_environment", counting)
    settings = Settings(project_id="root-test", emulator_host="localhost:1")
    db = get_db_client(settings)
    first = defaults.nudger_for(db, settings)
    assert first is not None
    assert all(defaults.nudger_for(db, settings) is first for _ in range(49))
    assert built[0] == 1
    assert environment_reads[0] == 1
