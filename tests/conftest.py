"""Fixtures shared by the tiers. Only tests that ask for `emulator_host` start Java."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from google.cloud import firestore

from firestore_outbox.config.loader import Configuration
from firestore_outbox.consumer.receiver import Receiver
from firestore_outbox.firestore.client import get_db_client
from firestore_outbox.firestore.settings import Settings
from firestore_outbox.publishers.rocketmq.client import keep_rocketmq_out_of_home
from firestore_outbox.testing.emulator import FirestoreEmulator, reset_emulator

PROJECT = "outbox-test"


def pytest_configure(config: pytest.Config) -> None:
    # A suite started in the background by a shell without job control (`cmd &` in a script,
    # nohup) has SIGINT ignored, and every process it starts inherits that: the tests that
    # press Ctrl-C on `outbox` would wait on a process that cannot hear it. A handled signal
    # is reset to its default in a started program, an ignored one is not.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # The suite's process is ours: the RocketMQ publisher's tests leave nothing in ~/logs.
    keep_rocketmq_out_of_home()


@pytest.fixture(autouse=True)
def fresh_process_configuration() -> Iterator[None]:
    """Each test reads the process's configuration (`Configuration.default()`, kept for the
    process) afresh: tests set variables that a configuration kept from another would hide."""
    Configuration.default.cache_clear()
    yield
    Configuration.default.cache_clear()


@pytest.fixture(autouse=True)
def _no_nudger_outlives_its_test() -> Iterator[None]:
    """The process's nudgers (`firestore_outbox.nudge`) a test built are closed and forgotten
    when it ends. Each is kept for the process by its configuration, and holds that test's
    addresses (an `http` target's URL; a `process` target's relay and its downstream): left
    alive, a later test's commit or a drain's hand-off could reach ports that are no longer
    its test's, and so answer with another test's server."""
    yield
    from firestore_outbox import nudge

    with nudge._lock:
        built = [n for cache in (nudge._shared, nudge._hand_offs) for n in cache.values() if n]
        nudge._shared.clear()
        nudge._hand_offs.clear()
        nudge._refused.clear()  # each test sees its own refusal logged
    for nudger in built:
        nudger.close()


@pytest.fixture(scope="session")
def emulator_host() -> Iterator[str]:
    """`FIRESTORE_EMULATOR_HOST` if set, else an emulator of our own on a free port."""
    external = os.environ.get("FIRESTORE_EMULATOR_HOST")
    if external:
        yield external
        return
    with FirestoreEmulator() as emulator:
        yield emulator.host_port


@pytest.fixture
def settings(emulator_host: str) -> Settings:
    reset_emulator(emulator_host, PROJECT)
    return Settings(project_id=PROJECT, emulator_host=emulator_host)


@pytest.fixture
def db(settings: Settings) -> firestore.Client:
    return get_db_client(settings)


@pytest.fixture
def unique() -> str:
    """A fresh id fragment, so values never collide across tests or runs."""
    return uuid.uuid4().hex[:12]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    """A real local HTTP downstream; set `receiver.respond` to script its answers."""
    with Receiver() as downstream:
        yield downstream


@pytest.fixture(scope="session")
def key_info() -> dict[str, Any]:
    """A service-account key with a freshly generated private key (never a real one)."""
    private_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return {
        "type": "service_account",
        "project_id": "key-project",
        "private_key_id": "abc123",
        "private_key": pem,
        "client_email": "relay@key-project.iam.gserviceaccount.com",
        "client_id": "1",
        "token_uri": "https://oauth2.googleapis.com/token",
    }
