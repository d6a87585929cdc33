"""The partitioned relay's settings: per-event or partition leases, how many partitions and
how many one claim takes, per-aggregate order and what a FAILED head event does, and where
the partition leases live (`RELAY_LEASES`, `RELAY_PARTITIONS`, ...;
`firestore_outbox.relay.partitioned.partitions`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from firestore_outbox.config.numbers import parse_whole
from firestore_outbox.errors import ConfigError
from firestore_outbox.publishers.settings import Get, at_least, read_numbers
from firestore_outbox.relay.partitioned.partitions import DEFAULT_PARTITIONS, check_partitions


class LeaseMode(str, enum.Enum):
    """What an invocation leases: partitions (`RELAY_LEASES=partition`, one write per event,
    per-aggregate order) or single events (`RELAY_LEASES=event`, the leases of 0.2)."""

    PARTITION = "partition"
    EVENT = "event"


class Ordering(str, enum.Enum):
    """`RELAY_ORDERING`: one aggregate's events in commit order, or in no order."""

    AGGREGATE = "aggregate"
    NONE = "none"


class FailedHead(str, enum.Enum):
    """`RELAY_FAILED_HEAD`: a FAILED head event holds its aggregate's later events, or not."""

    HOLD = "hold"
    SKIP = "skip"


@dataclass(frozen=True, kw_only=True)
class PartitionSettings:
    """`leases`: "partition" (invocations lease partitions and settle each event with one
    write) or "event" (the per-event leases of 0.2, two writes per event, no order, kept to
    compare); `ordering`: "aggregate", "none", or None for the leases' own (`ordered` says
    which applies); `failed_head`: "hold" or "skip"."""

    leases: LeaseMode = LeaseMode.PARTITION
    partitions: int = DEFAULT_PARTITIONS
    # None: aggregate order with partition leases, none with per-event leases, which cannot
    # order; "aggregate" with per-event leases is refused rather than silently ignored.
    ordering: Ordering | None = None
    failed_head: FailedHead = FailedHead.HOLD
    partition_collection: str = "outbox_partitions"
    partitions_per_claim: int = 4

    @property
    def ordered(self) -> bool:
        """Whether one aggregate's events are delivered in commit order."""
        return self.leases is LeaseMode.PARTITION and self.ordering in (None, Ordering.AGGREGATE)

    def _check_partitioning(self) -> None:
        for variable, value, allowed in (
            ("RELAY_LEASES", self.leases, ("partition", "event")),
            ("RELAY_ORDERING", self.ordering or "aggregate", ("aggregate", "none")),
            ("RELAY_FAILED_HEAD", self.failed_head, ("hold", "skip")),
        ):
            if value not in allowed:
                raise ConfigError(f"{variable} must be {' or '.join(allowed)}, got {value!r}")
        # Given as text (the environment, or code of before the enums): the enum from here on.
        object.__setattr__(self, "leases", LeaseMode(self.leases))
        if self.ordering is not None:
            object.__setattr__(self, "ordering", Ordering(self.ordering))
        object.__setattr__(self, "failed_head", FailedHead(self.failed_head))
        if self.leases is LeaseMode.EVENT and self.ordering is Ordering.AGGREGATE:
            raise ConfigError(
                "RELAY_ORDERING=aggregate needs partition leases: with RELAY_LEASES=event events "
                "are delivered in no order; unset RELAY_ORDERING (or set it to none), or unset "
                "RELAY_LEASES"
            )
        check_partitions(self.partitions)
        at_least("RELAY_PARTITIONS_PER_CLAIM", self.partitions_per_claim, 1)
        if not self.partition_collection.strip() or "/" in self.partition_collection:
            raise ConfigError("RELAY_PARTITION_COLLECTION must be a collection name")


def read_partitioning(get: Get) -> dict[str, Any]:
    """`PartitionSettings`' fields from the environment."""
    return {
        "leases": (get("RELAY_LEASES") or "partition").lower(),
        "ordering": (get("RELAY_ORDERING") or "").lower() or None,
        "failed_head": (get("RELAY_FAILED_HEAD") or "hold").lower(),
        "partition_collection": get("RELAY_PARTITION_COLLECTION") or "outbox_partitions",
        **read_numbers(
            get,
            {
                "partitions": ("RELAY_PARTITIONS", parse_whole),
                "partitions_per_claim": ("RELAY_PARTITIONS_PER_CLAIM", parse_whole),
            },
        ),
    }
