"""Partitions: which slice of the outbox an event belongs to, and in what order it goes.

An event's partition is a stable hash of its `aggregateId` (the first 8 bytes of its SHA-256,
big-endian, modulo `RELAY_PARTITIONS`), so every event of one aggregate lands in the same
partition whatever process computes it: Python's own `hash()` is salted per process and
would not do. The repository writes it as the `partition` field when the event is created,
with `sequence`, the event's position in its unit of work, so events committed together
(one commit time) keep the order they were added in. The relay orders a partition's events
by `(createdAt, sequence, document name)`: commit order, then batch order.

The count must stay the same for the life of a deployment: events already written keep the
partition they were written with (docs/concepts/partitions.md says how to change it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection

from firestore_outbox.errors import ConfigError, InvalidInput
from firestore_outbox.fields import HELD, PARTITION, SEQUENCE

__all__ = [
    "DEFAULT_PARTITIONS",
    "HELD",
    "MAX_PARTITIONS",
    "PARTITION",
    "SEQUENCE",
    "check_partitions",
    "checked_partitions",
    "partition_chunks",
    "partition_of",
]

DEFAULT_PARTITIONS = 16
# Firestore's `in` filters and a lease read of every partition stay small below this.
MAX_PARTITIONS = 1024


# Firestore expands a query's `in` filters into at most 30 disjunctions (their product).
MAX_DISJUNCTIONS = 30


def partition_chunks(partitions: int, *, per_partition: int = 1) -> list[list[int]]:
    """The partitions `0 .. partitions - 1` in as few lists as `partition in` filters can
    take, each partition bringing `per_partition` disjunctions (2 beside `status in` two
    statuses). A query over every partition that orders or ranges by a timestamp runs once
    per list, with the partition as its first filter: its composite index then leads with
    `partition`, and its writes spread over as many key ranges instead of the end of one."""
    size = max(1, MAX_DISJUNCTIONS // per_partition)
    return [
        list(range(start, min(partitions, start + size))) for start in range(0, partitions, size)
    ]


def partition_of(aggregate_id: str, partitions: int) -> int:
    """The partition of `aggregate_id` among `partitions`: stable across processes, hosts
    and Python versions."""
    digest = hashlib.sha256(aggregate_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % partitions


def check_partitions(value: object) -> int:
    """`value` if it is a usable partition count, else `ConfigError` naming the variable."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PARTITIONS:
        raise ConfigError(
            f"RELAY_PARTITIONS must be a whole number from 1 to {MAX_PARTITIONS}, got {value!r}"
        )
    return value


def checked_partitions(partitions: Collection[int], count: int) -> list[int]:
    """`partitions` sorted, each once, if every one is a whole number in `[0, count)`;
    else `InvalidInput` naming the parameter (a nudge's are checked before: `read_nudge`)."""
    if not all(
        isinstance(p, int) and not isinstance(p, bool) and 0 <= p < count for p in partitions
    ):
        raise InvalidInput(
            f"partitions must be whole numbers from 0 to {count - 1} (RELAY_PARTITIONS)"
        )
    return sorted(set(partitions))
