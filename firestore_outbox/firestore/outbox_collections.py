"""`OutboxCollections`: every collection the library writes for one outbox besides the events,
named after the outbox's collection (`OUTBOX_COLLECTION`) so that two outboxes in one
database share nothing.

| what | default name | explicit variable (wins) |
| --- | --- | --- |
| partition leases | `{OUTBOX_COLLECTION}_partitions` | `RELAY_PARTITION_COLLECTION` |
| lease-mode records | the partition leases' name + `_mode` | (follows the leases) |
| heartbeats, the watchdog's incidents | `{OUTBOX_COLLECTION}_health` | `OUTBOX_HEALTH_COLLECTION` |
| re-drive jobs | `{OUTBOX_COLLECTION}_redrive` | none |

For `OUTBOX_COLLECTION=outbox` these are `outbox_partitions`, `outbox_partitions_mode`,
`outbox_health` and `outbox_redrive` (docs/upgrading.md says which deployments this moves).

Not the outbox's, so not derived: the consumer's inbox (`INBOX_COLLECTION`; one consumer
receives from any number of outboxes, and its records are keyed by `ce-source`, which names the
outbox's collection), the HTTP front door's idempotency keys (`IDEMPOTENCY_COLLECTION`; the
API's, which may have no outbox at all), the reference receiver's counts
(`RECEIVER_COUNTS_COLLECTION`) and the business collections (`ORDERS_COLLECTION`, a team's own).

Every component (the relay, the watchdog, the console, the commands, re-drive) and
`Configuration.collections` resolve the names here, and only here.
"""

from __future__ import annotations

from dataclasses import dataclass

from firestore_outbox.errors import ConfigError
from firestore_outbox.firestore.limits import check_collection_id

__all__ = ["OutboxCollections", "derived_collection"]


def derived_collection(outbox: str, role: str) -> str:
    """The default name of the outbox `outbox`'s collection for `role` (`partitions`,
    `health`, `redrive`): `f"{outbox}_{role}"`."""
    return f"{outbox}_{role}"


@dataclass(frozen=True)
class OutboxCollections:
    """The names one outbox's data lives under; `OutboxCollections.of(outbox)` derives them,
    `Configuration.load().collections` reads them from the environment."""

    outbox: str
    partitions: str
    health: str

    def __post_init__(self) -> None:
        # A name derived from a valid one may still be too long: say which variable names it.
        for variable, name in (
            ("OUTBOX_COLLECTION", self.outbox),
            (
                "RELAY_PARTITION_COLLECTION (unset: OUTBOX_COLLECTION + _partitions)",
                self.partitions,
            ),
            ("RELAY_PARTITION_COLLECTION + _mode (the lease-mode records)", self.partition_modes),
            ("OUTBOX_HEALTH_COLLECTION (unset: OUTBOX_COLLECTION + _health)", self.health),
            ("OUTBOX_COLLECTION + _redrive (the re-drive jobs)", self.redrive),
        ):
            if problem := check_collection_id(name):
                raise ConfigError(f"{variable} {problem}")
        # Lease documents among the events (or heartbeats among the leases) would be read as
        # what they are not.
        names = self.names()
        for role, name in names.items():
            same = [r for r, n in names.items() if n == name and r != role]
            if same:
                raise ConfigError(
                    f"RELAY_PARTITION_COLLECTION, OUTBOX_HEALTH_COLLECTION and OUTBOX_COLLECTION "
                    f"must name different collections: {role} and {same[0]} are both {name!r}"
                )

    @classmethod
    def of(
        cls, outbox: str, *, partitions: str | None = None, health: str | None = None
    ) -> OutboxCollections:
        """The collections of the outbox `outbox`: each one given, or derived from `outbox`."""
        return cls(
            outbox,
            partitions or derived_collection(outbox, "partitions"),
            health or derived_collection(outbox, "health"),
        )

    @property
    def partition_modes(self) -> str:
        """The relays' lease-mode records (`firestore_outbox.relay.run.mode_records`)."""
        return f"{self.partitions}_mode"

    @property
    def redrive(self) -> str:
        """The re-drive jobs (`firestore_outbox.redrive`)."""
        return derived_collection(self.outbox, "redrive")

    def names(self) -> dict[str, str]:
        """Every collection by what it holds: the events and the outbox's own ones."""
        return {
            "outbox": self.outbox,
            "partitions": self.partitions,
            "partition_modes": self.partition_modes,
            "health": self.health,
            "redrive": self.redrive,
        }
