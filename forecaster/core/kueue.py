"""What Kueue could still admit onto a pool: prewarm beyond it would wait for quota, unused.

Kueue admits a workload only when its ClusterQueue has quota for it on a ResourceFlavor; a
flavor maps to our pool through its ``nodeLabels`` (``karpenter.sh/nodepool``). Per pool we get
the ClusterQueues with GPU quota on the pool's flavors and compute the GPUs that could still be
admitted:

* a ClusterQueue without a cohort: ``nominal - used``;
* queues in a cohort may borrow: each up to ``nominal + borrowingLimit`` (no limit: the whole
  cohort), and all together never beyond the cohort's total nominal quota, so the cohort admits
  ``min(total - used by all, sum of each queue's own room)``.

The pool's room is the sum over its cohorts and lone queues. Workloads that hold quota but whose
pods do not exist yet (``QuotaReserved`` without ``Admitted``, e.g. waiting for an admission
check) are notice (``actuators.notice.kueue_reserved``): their quota is used already, so the
planner adds their GPUs to this room. Quota-blocked workloads make no pods (or only gated ones,
which the observer does not count), so they add no demand. Pure: the actuators' reader builds
these values from the objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class QueueQuota:
    """One ClusterQueue's GPU quota on the pool's flavor(s)."""

    name: str
    cohort: str | None
    nominal_gpus: int
    borrowing_limit_gpus: int | None
    """None: may borrow up to the cohort's total."""
    used_gpus: int
    """Quota reserved by workloads (``status.flavorsReservation``), running or about to."""


@dataclass(frozen=True)
class QueueHealth:
    """What Kueue users watch per ClusterQueue, from its Workloads."""

    name: str
    admission_wait_p95_s: float | None
    """P95 of creation -> Admitted over the admitted workloads seen; None when none."""
    pods_ready_timeouts: int
    """Workloads evicted with reason ``PodsReadyTimeout`` (pods not Ready in time)."""


@dataclass(frozen=True)
class KueueRoom:
    """What Kueue could still admit onto one pool, and why."""

    admissible_gpus: int
    scope: str
    """Which quota binds, e.g. "cohort `research`" or "ClusterQueue `team-a`"."""
    health: tuple[QueueHealth, ...] = ()


def room(
    queues: Sequence[QueueQuota],
    *,
    health: Sequence[QueueHealth] = (),
) -> KueueRoom:
    """The GPUs Kueue could still admit over ``queues`` (see the module docstring)."""
    cohorts: dict[str, list[QueueQuota]] = {}
    lone: list[QueueQuota] = []
    for queue in queues:
        if queue.cohort:
            cohorts.setdefault(queue.cohort, []).append(queue)
        else:
            lone.append(queue)
    parts: list[tuple[int, str]] = [
        (max(0, q.nominal_gpus - q.used_gpus), f"ClusterQueue `{q.name}`") for q in lone
    ]
    for cohort, members in sorted(cohorts.items()):
        total = sum(q.nominal_gpus for q in members)
        used = sum(q.used_gpus for q in members)
        own = 0
        for q in members:
            ceiling = (
                total if q.borrowing_limit_gpus is None else q.nominal_gpus + q.borrowing_limit_gpus
            )
            own += max(0, min(ceiling, total) - q.used_gpus)
        parts.append((max(0, min(total - used, own)), f"cohort `{cohort}`"))
    scope = ", ".join(name for _, name in parts) or "no ClusterQueue with quota on this pool"
    return KueueRoom(sum(gpus for gpus, _ in parts), scope, tuple(health))
