"""The Function Compute publishers' settings (`fc`, FC 2.0's API; `fc3`, FC 3.0's): the
function to invoke (`RELAY_FC_*`) and the AccessKey that signs the invocation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.settings import AccessKeySettings, Get, required, usable_url


@dataclass(frozen=True, kw_only=True)
class FcSettings(AccessKeySettings):
    """`RELAY_FC_ENDPOINT`, `_SERVICE` (FC 2.0 only), `_FUNCTION`, `_QUALIFIER` (a version or
    alias) and `_INVOCATION_TYPE` (`async`, the default, or `sync`; `fc3` takes async only)."""

    fc_endpoint: str | None = None
    fc_service: str | None = None
    fc_function: str | None = None
    fc_qualifier: str | None = None
    fc_invocation_type: str = "async"

    def _check_fc(self) -> None:
        self._check_function(
            "RELAY_FC",
            (self.fc_endpoint, self.fc_service, self.fc_function),
            "RELAY_PUBLISHER=fc",
        )
        if self.fc_invocation_type not in ("async", "sync"):
            raise ConfigError(
                f"RELAY_FC_INVOCATION_TYPE must be async or sync, got {self.fc_invocation_type!r}"
            )

    def _check_fc3(self) -> None:
        """No service (FC 3.0 has none); asynchronous invocation only."""
        required(
            "RELAY_PUBLISHER=fc3",
            ("RELAY_FC_ENDPOINT", self.fc_endpoint),
            ("RELAY_FC_FUNCTION", self.fc_function),
            *self._access_key(),
        )
        usable_url("RELAY_FC_ENDPOINT", str(self.fc_endpoint))
        if self.fc_invocation_type != "async":
            raise ConfigError(
                "RELAY_FC_INVOCATION_TYPE must be async with RELAY_PUBLISHER=fc3: its task ids, "
                "which let Function Compute refuse a duplicate, exist only for asynchronous calls"
            )

    def _check_function(
        self,
        prefix: str,
        target: tuple[str | None, str | None, str | None],
        needed_by: str,
        *,
        service_needed: bool = True,
    ) -> None:
        """A Function Compute function to invoke (the `fc` publisher's, or fan-out's):
        `PREFIX_ENDPOINT`, `_SERVICE` (unless not `service_needed`: FC 3.0 has none),
        `_FUNCTION` and the credentials that sign it."""
        endpoint, service, function = target
        required(
            needed_by,
            (f"{prefix}_ENDPOINT", endpoint),
            *([(f"{prefix}_SERVICE", service)] if service_needed else []),
            (f"{prefix}_FUNCTION", function),
            *self._access_key(),
        )
        usable_url(f"{prefix}_ENDPOINT", str(endpoint))


def read_fc(get: Get) -> dict[str, Any]:
    """`FcSettings`' own fields from the environment."""
    return {
        "fc_endpoint": get("RELAY_FC_ENDPOINT"),
        "fc_service": get("RELAY_FC_SERVICE"),
        "fc_function": get("RELAY_FC_FUNCTION"),
        "fc_qualifier": get("RELAY_FC_QUALIFIER"),
        "fc_invocation_type": (get("RELAY_FC_INVOCATION_TYPE") or "async").lower(),
    }
