"""What acting on a plan did, as plain data (shared by the Kubernetes actuator and the twin)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    """What the autoscaler reports on a pool's CapacityBuffer (status.replicas, conditions)."""
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
