"""The partitioned relay's settings: per-event or partition leases, how many partitions and
how many one claim takes, per-aggregate order and what a FAILED head event does, and where
the partition leases live (`RELAY_LEASES`, `RELAY_PARTITIONS`, ...;
`firestore_outbox.partitions`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from firestore_outbox.errors import ConfigError
from firestore_outbox.numbers import Get, at_least, parse_whole, read_numbers
from firestore_outbox.partitions import DEFAULT_PARTITIONS, check_partitions


class LeaseMode(str, enum.Enum):
    """What an invocation leases: partitions (`RELAY_LEASES=partition`, one write per event,
    per-aggregate order) or single events (`RELAY_LEASES=event`, a lease write per event)."""

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
    """`leases`: partition (invocations lease partitions and settle each event with one write)
    or event (per-event leases, two writes per event, no order, kept to compare);
    `count` partitions (`RELAY_PARTITIONS`), `per_claim` claimed at once
    (`RELAY_PARTITIONS_PER_CLAIM`), their leases in `collection`
    (`RELAY_PARTITION_COLLECTION`; None: `{OUTBOX_COLLECTION}_partitions`, see
    `firestore_outbox.firestore.outbox_collections`); `ordering`: aggregate, none, or None
    for the leases' own (`ordered` says which applies); `failed_head`: hold or skip."""

    leases: LeaseMode = LeaseMode.PARTITION
    count: int = DEFAULT_PARTITIONS
    # None: aggregate order with partition leases, none with per-event leases, which cannot
    # order; "aggregate" with per-event leases is refused rather than silently ignored.
    ordering: Ordering | None = None
    failed_head: FailedHead = FailedHead.HOLD
    collection: str | None = None
    per_claim: int = 4

    @property
    def ordered(self) -> bool:
        """Whether one aggregate's events are delivered in commit order."""
        return self.leases is LeaseMode.PARTITION and self.ordering in (None, Ordering.AGGREGATE)

    @property
    def holds_failed(self) -> bool:
        """Whether a FAILED head event holds its aggregate's later events."""
        return self.ordered and self.failed_head is FailedHead.HOLD

    def __post_init__(self) -> None:
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
        check_partitions(self.count)
        at_least("RELAY_PARTITIONS_PER_CLAIM", self.per_claim, 1)
        if self.collection is not None and (not self.collection.strip() or "/" in self.collection):
            raise ConfigError("RELAY_PARTITION_COLLECTION must be a collection name")

    @classmethod
    def from_environment(cls, get: Get) -> PartitionSettings:
        return cls(
            leases=(get("RELAY_LEASES") or "partition").lower(),  # type: ignore[arg-type]
            ordering=(get("RELAY_ORDERING") or "").lower() or None,  # type: ignore[arg-type]
            failed_head=(get("RELAY_FAILED_HEAD") or "hold").lower(),  # type: ignore[arg-type]
            collection=get("RELAY_PARTITION_COLLECTION"),
            **read_numbers(
                get,
                {
                    "count": ("RELAY_PARTITIONS", parse_whole),
                    "per_claim": ("RELAY_PARTITIONS_PER_CLAIM", parse_whole),
                },
            ),
        )
