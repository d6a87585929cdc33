"""The counting rules of `bench/event_path.py` (`bench/path_counts.py`), on call sequences
written out by hand, with the figures counted by hand."""

from __future__ import annotations

from bench.path_counts import count, moves_and_returns, steps_back

RUN = "firestore_outbox.relay.run.relay"
DRAIN = "firestore_outbox.relay.run.partition_drain"
CLAIM = "firestore_outbox.relay.claim.holdings"
READ = "firestore_outbox.relay.read.page_reads"
PUBLISH = "firestore_outbox.relay.publish.head_sender"
RAW = "firestore_outbox.firestore.raw"


def test_moves_and_returns_collapse_repeats_and_leave_the_driver_out_of_one_count() -> None:
    calls = [
        ("relay/run", RUN),
        ("relay/claim", CLAIM),
        ("relay/claim", CLAIM),  # a repeat: no move
        ("firestore", RAW),
        ("relay/claim", CLAIM),  # back into claim: a return
        ("relay/run", DRAIN),  # back into the driver: a return, not counted without it
    ]
    # run > claim > firestore > claim > run: 4 moves, 2 returns, 1 not into the driver
    assert moves_and_returns(calls) == (4, 2, 1)
    assert moves_and_returns([]) == (0, 0, 0)


def test_steps_back_are_calls_into_an_earlier_step_of_the_lease_modes_order() -> None:
    edges = [
        ((CLAIM, "claim"), (DRAIN, "more")),  # claim -> the run: back
        ((PUBLISH, "send"), (CLAIM, "renew")),  # publish -> claim: back
        ((CLAIM, "claim"), (PUBLISH, "send")),  # forward
        ((PUBLISH, "send"), (PUBLISH, "_lease")),  # within one module: no step
        ((PUBLISH, "send"), (RAW, "write")),  # below the relay: no step
    ]
    assert steps_back(edges, "partition") == [
        "relay.claim.holdings -> relay.run.partition_drain.more",
        "relay.publish.head_sender -> relay.claim.holdings.renew",
    ]
    # with per-event leases reading comes before claiming: read -> claim is forward there
    read_then_claim = [((READ, "page"), (CLAIM, "claim")), ((RUN, "run"), (DRAIN, "run"))]
    assert steps_back(read_then_claim, "event") == []
    assert steps_back(read_then_claim, "partition") == [
        "relay.read.page_reads -> relay.claim.holdings.claim"
    ]


def test_an_older_tree_is_counted_by_where_its_code_moved() -> None:
    # No call into relay.run.*: the tree is the older one, its modules named by OLD_STEPS.
    old_sender = "firestore_outbox.relay.partitioned.head_sender"
    old_drain = "firestore_outbox.relay.partitioned.drain"
    assert steps_back([((old_sender, "send"), (old_drain, "_stopping"))], "partition") == [
        "relay.partitioned.head_sender -> relay.partitioned.drain._stopping"
    ]


def test_count_reads_files_in_the_order_they_are_first_entered() -> None:
    calls = [
        ("relay/run", RUN),
        ("relay/claim", CLAIM),
        ("relay/run", RUN),
        ("relay/read", READ),
        ("relay/claim", CLAIM),
    ]
    figures = count(calls, [], "partition")
    assert figures["files"] == 3 and figures["folders"] == 3
    assert figures["readingOrder"] == [RUN, CLAIM, READ]
    # calls: run > claim > run > read > claim (4 moves, 2 returns; the return to run is the
    # driver's); reading order: run > claim > read (2 moves, no return)
    assert (figures["moves"], figures["returns"], figures["returnsNoDriver"]) == (4, 2, 1)
    assert (figures["readMoves"], figures["readReturns"]) == (2, 0)
    assert figures["stepsBack"] == 0
