"""The nudge's targets: FC 3.0 async invoke of the relay function (`fc3`, with the function
and AccessKey fan-out uses), an HTTP POST (`http`), and drains in this process (`process`:
`firestore_outbox.nudge.process`, over a relay the composition root builds:
`NudgeSettings.drain`). Each is built from its `NudgeSettings` when the first commit needs
it (`nudger_for`)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from firestore_outbox.errors import ConfigError
from firestore_outbox.nudge.message import nudge_body, nudge_delivery
from firestore_outbox.nudge.settings import NudgeMode, NudgeSettings
from firestore_outbox.publishers.base import Outcome, cloudevent_attributes
from firestore_outbox.publishers.cloud import access_key
from firestore_outbox.publishers.fc.settings import check_function
from firestore_outbox.publishers.http.transport import HttpTransport
from firestore_outbox.publishers.http.urls import split_credentials, url_secrets
from firestore_outbox.signing import Signer

if TYPE_CHECKING:
    from google.cloud.firestore import Client

    from firestore_outbox.firestore.settings import Settings
    from firestore_outbox.nudge.sender import NudgeTarget
    from firestore_outbox.publishers.fc.fc3 import Fc3Publisher

logger = logging.getLogger("firestore_outbox.nudge")

SOURCE = "//firestore-outbox/nudge"


class Fc3Nudge:
    """Invokes the relay function asynchronously; the task id (`nudge_delivery`) lets
    Function Compute refuse the same nudge from several processes within its window."""

    def __init__(
        self,
        publisher: Fc3Publisher,
        timeout: float,
        *,
        unique: bool = False,
        count: int | None = None,
    ) -> None:
        self._publisher = publisher
        self._timeout = timeout
        self._unique = unique  # a hand-off's: never refused as a repeat
        self._count = count  # the producer's RELAY_PARTITIONS, sent along

    def send(self, partitions: frozenset[int]) -> bool:
        deadline = time.monotonic() + self._timeout
        delivery = nudge_delivery(
            partitions, SOURCE, deadline, unique=self._unique, count=self._count
        )
        result = self._publisher.publish(delivery)
        return result.outcome is Outcome.DELIVERED

    def close(self) -> None:
        self._publisher.close()


class HttpNudge:
    """POSTs the nudge's CloudEvent JSON to `url` (a relay behind an HTTP trigger:
    `firestore_outbox.function_compute.http_handler`) through the HTTP publisher's
    transport: one deadline, `timeout` seconds, over the connect, the send and the whole
    answer, so a target that trickles its answer holds the sender no longer than that. With
    `secrets` (`OUTBOX_NUDGE_SECRET`) each nudge is signed as deliveries are (Standard
    Webhooks headers over the exact body). A token in the URL never reaches a log; user info
    goes as Basic auth."""

    def __init__(
        self,
        url: str,
        timeout: float,
        *,
        unique: bool = False,
        count: int | None = None,
        secrets: tuple[str, ...] = (),
    ) -> None:
        self._url, self._authorization = split_credentials(url)
        self._unique = unique
        self._count = count
        self._signer = Signer(secrets) if secrets else None
        self._transport = HttpTransport(
            connect_timeout=timeout, read_timeout=timeout, pool_size=1, secrets=url_secrets(url)
        )
        self._timeout = timeout

    def send(self, partitions: frozenset[int]) -> bool:
        deadline = time.monotonic() + self._timeout
        delivery = nudge_delivery(
            partitions, SOURCE, deadline, unique=self._unique, count=self._count
        )
        body = nudge_body(delivery)
        headers = {"Content-Type": "application/json"}
        if self._signer is not None:  # the body holds every attribute: all of it is signed
            headers.update(self._signer.sign(cloudevent_attributes(delivery), body).headers())
        if self._authorization:
            headers["Authorization"] = self._authorization
        result = self._transport.post(self._url, body, headers, deadline=deadline)
        if result.outcome is not Outcome.DELIVERED:
            logger.debug("nudge not taken: %s", result.error)
        return result.outcome is Outcome.DELIVERED

    def close(self) -> None:
        self._transport.close()


def build_target(
    nudge: NudgeSettings,
    db: Client,
    settings: Settings,
    *,
    unique: bool = False,
) -> NudgeTarget:
    """The target `nudge.mode` names (not `off`); `ConfigError` names a missing variable.
    `unique`: each nudge with a task id of its own (a relay's hand-offs)."""
    if nudge.mode is NudgeMode.HTTP:
        return HttpNudge(
            str(nudge.url),
            nudge.timeout_seconds,
            unique=unique,
            count=nudge.partition_count,
            secrets=nudge.secrets,
        )
    if nudge.mode is NudgeMode.PROCESS:
        if nudge.drain is None:
            raise ConfigError("OUTBOX_NUDGE=process needs the relay's configuration")
        return nudge.drain(db, settings)
    function = nudge.fan_out
    if function is None:
        raise ConfigError("OUTBOX_NUDGE=fc3 needs the fan-out's settings (RELAY_FAN_OUT_*)")
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
    return Fc3Nudge(publisher, timeout, unique=unique, count=nudge.partition_count)
