"""Fan-out: a relay invocation facing more than it can drain starts more, asynchronously.

On Function Compute one invocation drains the partitions it claims within its budget. When
the open events counted at the start of a run exceed what one invocation is expected to
drain (`RELAY_FAN_OUT_EVENTS`), the first invocation (a timer tick, never a fanned-out one)
invokes the relay function itself `ceil(open / RELAY_FAN_OUT_EVENTS) - 1` more times, at most
`RELAY_FAN_OUT_MAX` and no more than there are partitions for, through Function Compute's
asynchronous invoke API: FC 3.0's InvokeFunction (`firestore_outbox.publishers.fc.fc3` sends it;
what s.yaml deploys), or FC 2.0's for a function in a service (`RELAY_FAN_OUT_SERVICE`,
`firestore_outbox.publishers.fc.fc2`). Each of them claims partitions the others do not hold:
partition leases already split the work. The function's role needs `fc:InvokeFunction` on the relay
function itself (docs/deploying.md).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from firestore_outbox.numbers import Get, at_least, parse_whole, read_numbers
from firestore_outbox.publishers.base import Delivery, Outcome, PublisherOptions
from firestore_outbox.publishers.cloud import access_key
from firestore_outbox.publishers.fc.settings import check_function
from firestore_outbox.publishers.settings import AccessKeySettings

if TYPE_CHECKING:
    from firestore_outbox.publishers.fc.fc2 import FcPublisher
    from firestore_outbox.publishers.fc.fc3 import Fc3Publisher
    from firestore_outbox.relay.partition_settings import PartitionSettings

# The CloudEvents type of a fanned-out invocation's event: the handler does not fan out again.
FAN_OUT_TYPE = "firestore-outbox.relay.fan-out"
_INVOKE_SECONDS = 5.0


@dataclass(frozen=True, kw_only=True)
class FanOutSettings:
    """`max` more invocations at most (`RELAY_FAN_OUT_MAX`; 0, the default: off), one per
    `events` open events (`RELAY_FAN_OUT_EVENTS`), of the function `endpoint`/`function`
    (`RELAY_FAN_OUT_ENDPOINT`, `_FUNCTION`; and `_SERVICE` for an FC 2.0 one), signed with
    the AccessKey."""

    max: int = 0
    events: int = 2000  # events one invocation is expected to drain in its budget
    endpoint: str | None = None
    service: str | None = None
    function: str | None = None
    access_key: AccessKeySettings = field(default_factory=AccessKeySettings)

    def __post_init__(self) -> None:
        at_least("RELAY_FAN_OUT_MAX", self.max, 0)
        at_least("RELAY_FAN_OUT_EVENTS", self.events, 1)
        if self.max:
            check_function(
                "RELAY_FAN_OUT",
                (self.endpoint, self.service, self.function),
                self.access_key,
                "RELAY_FAN_OUT_MAX",
                service_needed=False,  # without one, FC 3.0's API
            )

    @classmethod
    def from_environment(cls, get: Get) -> FanOutSettings:
        return cls(
            endpoint=get("RELAY_FAN_OUT_ENDPOINT"),
            service=get("RELAY_FAN_OUT_SERVICE"),
            function=get("RELAY_FAN_OUT_FUNCTION"),
            access_key=AccessKeySettings.from_environment(get),
            **read_numbers(
                get,
                {
                    "max": ("RELAY_FAN_OUT_MAX", parse_whole),
                    "events": ("RELAY_FAN_OUT_EVENTS", parse_whole),
                },
            ),
        )


def wanted(open_events: int, settings: FanOutSettings, partitions: PartitionSettings) -> int:
    """How many more invocations `open_events` call for."""
    more = math.ceil(open_events / settings.events) - 1
    room = math.ceil(partitions.count / partitions.per_claim) - 1
    return max(0, min(more, settings.max, room))


def is_fan_out(trigger: object) -> bool:
    """Whether an invocation's event is one this module sent."""
    return isinstance(trigger, dict) and trigger.get("type") == FAN_OUT_TYPE


class FanOut:
    """Invokes the relay function asynchronously, `start(n)` times at once."""

    def __init__(self, settings: FanOutSettings, source: str) -> None:
        self._source = source
        self._invoker = _invoker(settings)

    def start(self, count: int, instance: str) -> int:
        """Invoke `count` more relays; how many Function Compute accepted."""
        accepted = 0
        for n in range(count):
            body = json.dumps({"parent": instance, "n": n + 1}).encode()
            delivery = Delivery(
                event_id=f"{instance}-fan-out-{n + 1}",
                event_type=FAN_OUT_TYPE,
                source=self._source,
                subject=instance,
                time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                body=body,
                attempt=1,
                deadline=time.monotonic() + _INVOKE_SECONDS,
            )
            accepted += self._invoker.publish(delivery).outcome is Outcome.DELIVERED
        return accepted

    def close(self) -> None:
        self._invoker.close()


def _invoker(settings: FanOutSettings) -> Fc3Publisher | FcPublisher:
    """FC 3.0's InvokeFunction (`firestore_outbox.publishers.fc.fc3`, no task id); FC 2.0's for a
    function in a
    service (`RELAY_FAN_OUT_SERVICE` set; the `aliyun-fc2` extra, imported only then)."""
    credentials = access_key(settings.access_key)
    timeouts: PublisherOptions = {"connect_timeout": 2.0, "read_timeout": _INVOKE_SECONDS}
    if settings.service is None:
        from firestore_outbox.publishers.fc.fc3 import Fc3Publisher, Fc3Target

        target3 = Fc3Target(
            endpoint=str(settings.endpoint),
            function=str(settings.function),
            task_ids=False,
            **credentials,
        )
        return Fc3Publisher(target3, **timeouts)
    from firestore_outbox.publishers.fc.fc2 import FcPublisher, FcTarget

    target = FcTarget(
        endpoint=str(settings.endpoint),
        service=settings.service,
        function=str(settings.function),
        asynchronous=True,
        **credentials,
    )
    return FcPublisher(target, **timeouts)
