"""Fan-out: a relay invocation facing more than it can drain starts more, asynchronously.

On Function Compute one invocation drains the partitions it claims within its budget. When
the open events counted at the start of a run exceed what one invocation is expected to
drain (`RELAY_FAN_OUT_EVENTS`), the first invocation (a timer tick, never a fanned-out one)
invokes the relay function itself `ceil(open / RELAY_FAN_OUT_EVENTS) - 1` more times, at most
`RELAY_FAN_OUT_MAX` and no more than there are partitions for, through Function Compute's
asynchronous invoke API (signed like `app.relay.fc`, which sends it). Each of them claims
partitions the others do not hold: partition leases already split the work. The function's
role needs `fc:InvokeFunction` on the relay function itself (README: Deploy).
"""

from __future__ import annotations

import json
import math
import time
from typing import TYPE_CHECKING

from app.relay.publishers import Delivery, Outcome

if TYPE_CHECKING:
    from app.relay.config import RelayConfig

# The CloudEvents type of a fanned-out invocation's event: the handler does not fan out again.
FAN_OUT_TYPE = "firestore-outbox.relay.fan-out"
_INVOKE_SECONDS = 5.0


def wanted(open_events: int, config: RelayConfig) -> int:
    """How many more invocations `open_events` call for."""
    more = math.ceil(open_events / config.fan_out_events) - 1
    room = math.ceil(config.partitions / config.partitions_per_claim) - 1
    return max(0, min(more, config.fan_out_max, room))


def is_fan_out(trigger: object) -> bool:
    """Whether an invocation's event is one this module sent."""
    return isinstance(trigger, dict) and trigger.get("type") == FAN_OUT_TYPE


class FanOut:
    """Invokes the relay function asynchronously, `start(n)` times at once."""

    def __init__(self, config: RelayConfig, source: str) -> None:
        # Imported only when fan-out is configured: aliyun-fc2 is an optional extra.
        from app.relay.fc import FcPublisher, FcTarget

        self._source = source
        target = FcTarget(
            endpoint=str(config.fan_out_endpoint),
            service=str(config.fan_out_service),
            function=str(config.fan_out_function),
            asynchronous=True,
            access_key_id=str(config.access_key_id),
            access_key_secret=str(config.access_key_secret),
            security_token=config.security_token,
        )
        self._invoker = FcPublisher(target, connect_timeout=2.0, read_timeout=_INVOKE_SECONDS)

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
