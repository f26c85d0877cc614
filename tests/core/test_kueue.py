"""core.kueue: what a ClusterQueue or a cohort could still admit.

Cases: a lone queue admits nominal minus used, never below 0; a cohort admits what its total
nominal quota has left, whichever queue borrows it, and nothing once over its total; several
cohorts and lone queues add up and the scope names each; no queue at all admits nothing.
"""

from __future__ import annotations

from forecaster.core.kueue import QueueQuota, room


def test_a_lone_queue_admits_nominal_minus_used() -> None:
    assert room([QueueQuota("a", None, 32, None, 8)]).admissible_gpus == 24
    assert room([QueueQuota("a", None, 32, None, 40)]).admissible_gpus == 0
    assert room([QueueQuota("a", None, 32, None, 8)]).scope == "ClusterQueue `a`"


def test_a_cohort_admits_what_its_total_has_left_whoever_borrows_it() -> None:
    a = QueueQuota("a", "research", 16, 8, 16)  # full; may borrow 8 more
    b = QueueQuota("b", "research", 16, 0, 4)  # may not borrow: 12 of its own left
    assert room([a, b]).admissible_gpus == 12  # rooms 8 + 12, but the cohort has 32 - 20
    assert room([a, b]).scope == "cohort `research`"
    lender = QueueQuota("b", "research", 24, 0, 0)
    assert room([a, lender]).admissible_gpus == 24  # a may take 8 of it, b all 24


def test_a_cohort_over_its_total_admits_nothing() -> None:
    a = QueueQuota("a", "c", 8, None, 20)
    b = QueueQuota("b", "c", 8, 0, 0)
    assert room([a, b]).admissible_gpus == 0


def test_cohorts_and_lone_queues_add_up() -> None:
    result = room(
        [
            QueueQuota("a", "x", 8, 0, 0),
            QueueQuota("b", None, 4, None, 0),
            QueueQuota("c", "y", 16, 0, 8),
        ],
    )
    assert result.admissible_gpus == 8 + 4 + 8
    assert result.scope == "ClusterQueue `b`, cohort `x`, cohort `y`"
    assert room([]).admissible_gpus == 0
