"""Fan-out's settings (`RELAY_FAN_OUT_*`: how many more invocations a large backlog may start,
and the Function Compute function they invoke, `firestore_outbox.relay.fan_out`) and its ramp
governor's (`RELAY_RAMP*`: Firestore's 500/50/5 rule, `firestore_outbox.relay.ramp`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from firestore_outbox.config.numbers import parse_seconds, parse_whole
from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.fc.settings import FcSettings
from firestore_outbox.publishers.settings import Get, at_least, read_numbers
from firestore_outbox.relay.ramp import parse_ramp


@dataclass(frozen=True, kw_only=True)
class FanOutSettings(FcSettings):
    """`fan_out_max` more invocations at most (0: off), one per `fan_out_events` open events,
    of the function `fan_out_endpoint`/`_function` (and `_service` for an FC 2.0 one), signed
    with the AccessKey (hence `FcSettings`); `ramp` on: at most `ramp_rate` operations per
    second at first, 50% more after every `ramp_step_seconds`."""

    fan_out_max: int = 0
    fan_out_events: int = 2000  # events one invocation is expected to drain in its budget
    fan_out_endpoint: str | None = None
    fan_out_service: str | None = None
    fan_out_function: str | None = None
    ramp: bool = False
    ramp_rate: int = 500
    ramp_step_seconds: float = 300.0

    def _check_fan_out(self) -> None:
        at_least("RELAY_FAN_OUT_MAX", self.fan_out_max, 0)
        at_least("RELAY_FAN_OUT_EVENTS", self.fan_out_events, 1)
        at_least("RELAY_RAMP_RATE", self.ramp_rate, 1)
        if not self.ramp_step_seconds > 0:
            raise ConfigError(
                f"RELAY_RAMP_STEP_SECONDS must be greater than 0, got {self.ramp_step_seconds}"
            )
        if self.fan_out_max:
            self._check_function(
                "RELAY_FAN_OUT",
                (self.fan_out_endpoint, self.fan_out_service, self.fan_out_function),
                "RELAY_FAN_OUT_MAX",
                # without one, FC 3.0's API (`firestore_outbox.relay.fan_out`)
                service_needed=False,
            )


def read_fan_out(get: Get) -> dict[str, Any]:
    """`FanOutSettings`' own fields from the environment."""
    return {
        "fan_out_endpoint": get("RELAY_FAN_OUT_ENDPOINT"),
        "fan_out_service": get("RELAY_FAN_OUT_SERVICE"),
        "fan_out_function": get("RELAY_FAN_OUT_FUNCTION"),
        "ramp": parse_ramp(get("RELAY_RAMP")),
        **read_numbers(
            get,
            {
                "fan_out_max": ("RELAY_FAN_OUT_MAX", parse_whole),
                "fan_out_events": ("RELAY_FAN_OUT_EVENTS", parse_whole),
                "ramp_rate": ("RELAY_RAMP_RATE", parse_whole),
                "ramp_step_seconds": ("RELAY_RAMP_STEP_SECONDS", parse_seconds),
            },
        ),
    }
