"""The nudge's targets: FC 3.0 async invoke of the relay function (`fc3`, with the function
and AccessKey fan-out uses), an HTTP POST (`http`), and drains in this process (`process`:
`firestore_outbox.nudge.process`).
Each is built from the environment when the first commit needs it (`nudger_for`)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import urllib3

from firestore_outbox.config.settings import Settings, env_reader
from firestore_outbox.nudge.settings import NudgeMode, NudgeSettings
from firestore_outbox.nudge.wire import nudge_body, nudge_delivery
from firestore_outbox.publishers.base import Outcome
from firestore_outbox.publishers.cloud import access_key
from firestore_outbox.publishers.fc.settings import check_function
from firestore_outbox.relay.fan_out import FanOutSettings

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.nudge.sender import NudgeTarget
    from firestore_outbox.publishers.fc.fc3 import Fc3Publisher

logger = logging.getLogger("firestore_outbox.nudge")

SOURCE = "//firestore-outbox/nudge"


class Fc3Nudge:
    """Invokes the relay function asynchronously; the task id (`nudge_delivery`) lets
    Function Compute refuse the same nudge from several processes within its window."""

    def __init__(self, publisher: Fc3Publisher, timeout: float, *, unique: bool = False) -> None:
        self._publisher = publisher
        self._timeout = timeout
        self._unique = unique  # a hand-off's: never refused as a repeat

    def send(self, partitions: frozenset[int]) -> bool:
        deadline = time.monotonic() + self._timeout
        delivery = nudge_delivery(partitions, SOURCE, deadline, unique=self._unique)
        result = self._publisher.publish(delivery)
        return result.outcome is Outcome.DELIVERED

    def close(self) -> None:
        self._publisher.close()


class HttpNudge:
    """POSTs the nudge's CloudEvent JSON to `url` (a relay behind an HTTP trigger)."""

    def __init__(self, url: str, timeout: float, *, unique: bool = False) -> None:
        self._url = url
        self._unique = unique
        self._pool = urllib3.PoolManager(
            retries=False, timeout=urllib3.Timeout(connect=timeout, read=timeout)
        )
        self._timeout = timeout

    def send(self, partitions: frozenset[int]) -> bool:
        deadline = time.monotonic() + self._timeout
        body = nudge_body(nudge_delivery(partitions, SOURCE, deadline, unique=self._unique))
        answer = self._pool.request(
            "POST", self._url, body=body, headers={"Content-Type": "application/json"}
        )
        return 200 <= answer.status < 300

    def close(self) -> None:
        self._pool.clear()


def build_target(
    nudge: NudgeSettings,
    db: Client,
    settings: Settings,
    environ: Mapping[str, str] | None,
    *,
    unique: bool = False,
) -> NudgeTarget:
    """The target `nudge.mode` names (not `off`); `ConfigError` names a missing variable.
    `unique`: each nudge with a task id of its own (a relay's hand-offs)."""
    if nudge.mode is NudgeMode.HTTP:
        return HttpNudge(str(nudge.url), nudge.timeout_seconds, unique=unique)
    if nudge.mode is NudgeMode.PROCESS:
        from firestore_outbox.nudge.process import ProcessNudge
        from firestore_outbox.relay import Relay
        from firestore_outbox.relay.config import load_relay_config

        return ProcessNudge(Relay(db, settings, load_relay_config(environ)))
    function = FanOutSettings.from_environment(env_reader(environ))
    check_function(
        "RELAY_FAN_OUT",
        (function.endpoint, None, function.function),
        function.access_key,
        "OUTBOX_NUDGE=fc3",
        service_needed=False,
    )
    from firestore_outbox.publishers.fc.fc3 import Fc3Publisher, Fc3Target

    target = Fc3Target(
        endpoint=str(function.endpoint),
        function=str(function.function),
        task_ids=True,
        **access_key(function.access_key),
    )
    timeout = nudge.timeout_seconds
    publisher = Fc3Publisher(target, connect_timeout=timeout, read_timeout=timeout)
    return Fc3Nudge(publisher, timeout, unique=unique)
