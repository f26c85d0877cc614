"""Between plan and actuator: the commands a plan becomes, and what carrying them out did.

Shared by the Kubernetes actuator and the twin, so neither re-decides what the plan decided.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from forecaster.core.planner import NodePoolAction, Plan


@dataclass(frozen=True)
class PrewarmConduct:
    """How a prewarm backend's capacity behaves once held: what a replay must know of it.

    Each backend declares its own (``actuators.prewarm.registry``); the twin follows the
    declaration, never a backend's name.
    """

    pods: bool
    """Held by real low-priority pods: a real pod waits out their preemption grace, and they
    can pull the workload's images ahead. False: the capacity is held with no pod of ours
    (virtual pods pull nothing, nothing is evicted)."""
    refills: bool
    """Capacity a real pod took is brought back by the autoscaler itself, within its batch,
    not at the daemon's next tick."""


PLACEHOLDER_PODS = PrewarmConduct(pods=True, refills=False)
AUTOSCALER_HELD = PrewarmConduct(pods=False, refills=True)


@dataclass
class ActuationReport:
    """What a tick changed, per pool, and what failed."""

    created: dict[str, list[str]] = field(default_factory=dict)
    deleted: dict[str, list[str]] = field(default_factory=dict)
    wasted_gpu_hours: dict[str, float] = field(default_factory=dict)
    """GPU-hours of prewarm that ended without being used by a real pod."""
    used_gpus: dict[str, int] = field(default_factory=dict)
    """GPUs of prewarm that real pods took (placeholders they preempted) this tick."""
    nodepool: dict[str, str] = field(default_factory=dict)
    backend: dict[str, str] = field(default_factory=dict)
    """The backend each pool used and why (``capacitybuffer (auto: ...)``)."""
    buffer_status: dict[str, str] = field(default_factory=dict)
    """What the cluster reports on a pool's prewarm object, where its backend has one (a
    CapacityBuffer's status.replicas and conditions)."""
    errors: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Halt:
    """The on-call kill switch is on: withdraw every prewarm and write nothing new.

    Read from the ``forecaster-control`` ConfigMap (``forecaster pause`` writes it; GitOps can
    commit it); ``since`` is epoch seconds, ``by`` who set it.
    """

    reason: str
    by: str = ""
    since: int | None = None


@dataclass(frozen=True)
class ProtectNodePool:
    """Pause the pool's NodePool consolidation, or extend the pause's deadline."""

    pool: str


@dataclass(frozen=True)
class SetPrewarm:
    """Converge the pool's prewarm (placeholders or CapacityBuffer replicas) to ``units``."""

    pool: str
    units: int
    """Placeholders (or buffer replicas) of the pool's placeholder size; 0 removes them all."""
    gpus: int
    """The same target in GPUs (``units`` x the placeholder size)."""
    images: tuple[str, ...] = ()
    """Images the pool's recent pods ran: new placeholders pull them, so a warm node is warm
    for the workload too (``PoolSnapshot.recent_images``)."""


@dataclass(frozen=True)
class RestoreNodePool:
    """Put the pool's NodePool back as recorded (a no-op when we hold no pause)."""

    pool: str


Command = ProtectNodePool | SetPrewarm | RestoreNodePool
"""One thing for an actuator to carry out; ``commands(plan)`` gives them in a safe order."""


def commands(
    plan: Plan, *, images: Mapping[str, tuple[str, ...]] | None = None
) -> tuple[Command, ...]:
    """The plan as the ordered writes that carry it out (decide here, act in the actuator).

    Only pools that act get commands (forecast-only pools are never touched). Per pool the
    order never strands capacity: protect the NodePool before prewarm brings nodes up (so they
    are not consolidated under it), restore it only after the prewarm is gone. A held pause
    (``NodePoolAction.HOLD``) is left alone. ``images``: per pool, what new placeholders pull.
    """
    images = images or {}
    out: list[Command] = []
    for pool_plan in plan.pools:
        if not pool_plan.acts:
            continue
        name = pool_plan.pool
        prewarm = SetPrewarm(
            name, pool_plan.placeholders, pool_plan.target_gpus, images.get(name, ())
        )
        if pool_plan.nodepool is NodePoolAction.PAUSE:
            out.append(ProtectNodePool(pool_plan.pool))
        out.append(prewarm)
        if pool_plan.nodepool is NodePoolAction.RESTORE:
            out.append(RestoreNodePool(pool_plan.pool))
    return tuple(out)
