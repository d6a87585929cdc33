"""The Function Compute publishers' settings (`fc`, FC 2.0's API; `fc3`, FC 3.0's): the
function to invoke (`RELAY_FC_*`) and the AccessKey that signs the invocation. Fan-out
(`firestore_outbox.relay.fan_out`) checks the function it invokes with `check_function`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import Get
from firestore_outbox.publishers.settings import (
    AccessKeySettings,
    PublisherSettings,
    required,
    usable_url,
)


@dataclass(frozen=True, kw_only=True)
class FcSettings(PublisherSettings):
    """`RELAY_PUBLISHER=fc`: `RELAY_FC_ENDPOINT`, `_SERVICE`, `_FUNCTION`, `_QUALIFIER` (a
    version or alias) and `_INVOCATION_TYPE` (`async`, the default, or `sync`), signed with
    the AccessKey."""

    name: ClassVar[str] = "fc"
    endpoint: str
    service: str
    function: str
    qualifier: str | None = None
    invocation_type: str = "async"
    access_key: AccessKeySettings = field(default_factory=AccessKeySettings)

    def __post_init__(self) -> None:
        check_function(
            "RELAY_FC",
            (self.endpoint, self.service, self.function),
            self.access_key,
            "RELAY_PUBLISHER=fc",
        )
        if self.invocation_type not in ("async", "sync"):
            raise ConfigError(
                f"RELAY_FC_INVOCATION_TYPE must be async or sync, got {self.invocation_type!r}"
            )

    @classmethod
    def from_environment(cls, get: Get) -> FcSettings:
        return cls(
            endpoint=get("RELAY_FC_ENDPOINT") or "",
            service=get("RELAY_FC_SERVICE") or "",
            function=get("RELAY_FC_FUNCTION") or "",
            qualifier=get("RELAY_FC_QUALIFIER"),
            invocation_type=(get("RELAY_FC_INVOCATION_TYPE") or "async").lower(),
            access_key=AccessKeySettings.from_environment(get),
        )

    def destination(self) -> str:
        return self.function

    def secrets(self) -> tuple[str, ...]:
        return self.access_key.secrets()


@dataclass(frozen=True, kw_only=True)
class Fc3Settings(PublisherSettings):
    """`RELAY_PUBLISHER=fc3`: `RELAY_FC_ENDPOINT`, `_FUNCTION` and `_QUALIFIER` (FC 3.0 has no
    service), invoked asynchronously only, signed with the AccessKey."""

    name: ClassVar[str] = "fc3"
    endpoint: str
    function: str
    qualifier: str | None = None
    access_key: AccessKeySettings = field(default_factory=AccessKeySettings)

    def __post_init__(self) -> None:
        check_function(
            "RELAY_FC",
            (self.endpoint, None, self.function),
            self.access_key,
            "RELAY_PUBLISHER=fc3",
            service_needed=False,
        )

    @classmethod
    def from_environment(cls, get: Get) -> Fc3Settings:
        settings = cls(
            endpoint=get("RELAY_FC_ENDPOINT") or "",
            function=get("RELAY_FC_FUNCTION") or "",
            qualifier=get("RELAY_FC_QUALIFIER"),
            access_key=AccessKeySettings.from_environment(get),
        )
        if (get("RELAY_FC_INVOCATION_TYPE") or "async").lower() != "async":
            raise ConfigError(
                "RELAY_FC_INVOCATION_TYPE must be async with RELAY_PUBLISHER=fc3: its task ids, "
                "which let Function Compute refuse a duplicate, exist only for asynchronous calls"
            )
        return settings

    def destination(self) -> str:
        return self.function

    def secrets(self) -> tuple[str, ...]:
        return self.access_key.secrets()


def check_function(
    prefix: str,
    target: tuple[str | None, str | None, str | None],
    access_key: AccessKeySettings,
    needed_by: str,
    *,
    service_needed: bool = True,
) -> None:
    """A Function Compute function to invoke (a publisher's, or fan-out's):
    `PREFIX_ENDPOINT`, `_SERVICE` (unless not `service_needed`: FC 3.0 has none), `_FUNCTION`
    and the AccessKey that signs it."""
    endpoint, service, function = target
    required(
        needed_by,
        (f"{prefix}_ENDPOINT", endpoint),
        *([(f"{prefix}_SERVICE", service)] if service_needed else []),
        (f"{prefix}_FUNCTION", function),
        *access_key.required(),
    )
    usable_url(f"{prefix}_ENDPOINT", str(endpoint))
