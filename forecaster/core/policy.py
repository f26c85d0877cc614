"""Budgets and per-pool rules, as frozen dataclasses checked on construction.

A policy that makes no sense (negative caps, NaN prices, a placeholder bigger than a node)
refuses to exist, so the daemon refuses to start rather than spend on a misread budget.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from forecaster.accelerators import GPU


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _finite_non_negative(value: float, name: str) -> None:
    _require(math.isfinite(value) and value >= 0, f"{name} must be a finite number >= 0")


@dataclass(frozen=True)
class PoolPolicy:
    """How one NodePool may be prewarmed."""

    pool: str
    gpus_per_node: int
    placeholder_size_gpus: int
    max_prewarm_gpus: int
    price_per_gpu_hour: float
    stale_after_seconds: int
    hold_seconds: int
    forecast_only: bool = False
    allow_unlimited_nodepool: bool = False
    protect_nodepool: bool = False
    """Opt-in: also pause consolidation NodePool-wide while prewarming (bounded by a deadline)."""
    resource: str = GPU
    """The accelerator resource the pool is counted in: every ``*_gpus`` here is in its unit
    (``accelerators.unit_of``: MIG slices, Neuron devices ...)."""
    floor_gpus: int = 0
    """Prewarm at least this many GPUs whatever the forecast says: a small overprovisioner
    under it. A forecast of bursts leaves the steady trickle of small jobs to cold nodes; a
    floor keeps them a warm place to land. Only while the pool has a fresh forecast (no model,
    stale data, a hand-off: the same rules as all prewarm), and under every cap."""

    def __post_init__(self) -> None:
        _require(self.gpus_per_node > 0, f"{self.pool}: gpus_per_node must be > 0")
        _require(
            0 < self.placeholder_size_gpus <= self.gpus_per_node,
            f"{self.pool}: placeholder_size_gpus must be between 1 and gpus_per_node",
        )
        _require(self.max_prewarm_gpus >= 0, f"{self.pool}: max_prewarm_gpus must be >= 0")
        _require(self.floor_gpus >= 0, f"{self.pool}: floor_gpus must be >= 0")
        _finite_non_negative(self.price_per_gpu_hour, f"{self.pool}: price_per_gpu_hour")
        _require(self.stale_after_seconds > 0, f"{self.pool}: stale_after_seconds must be > 0")
        _require(self.hold_seconds >= 0, f"{self.pool}: hold_seconds must be >= 0")


@dataclass(frozen=True)
class Budgets:
    """Caps shared by all pools. Every cap is enforced by the planner itself."""

    max_total_prewarm_gpus: int
    max_prewarm_gpu_hours_per_day: float
    max_cost_per_hour: float
    commitment_seconds: int
    """How long a prewarm GPU can keep running if the daemon stops renewing it (placeholder
    TTL): the GPU-hours budget is charged for this long up front, so it holds even if we die."""
    notice_namespace_share: float = 1.0
    """The share of ``max_prewarm_gpu_hours_per_day`` one namespace's announced work may hold
    in a day (``NoticeLedger.over_share``): past it, its items are not planned until the day
    rolls on - one tenant's notice cannot spend the budget the other pools' floors live on."""
    notice_namespace_gpu_share: float = 1.0
    """The share of each pool's ``max_prewarm_gpus`` (on that pool) and of
    ``max_total_prewarm_gpus`` (over all pools) one namespace's announced work due at once may
    claim (``core.notice.over_gpu_share``): one tenant's notice cannot fill the caps the other
    pools' floors and forecasts are planned within."""

    @property
    def notice_namespace_gpu_hours(self) -> float:
        """What one namespace's announced work may hold in a day, in GPU-hours."""
        return self.notice_namespace_share * self.max_prewarm_gpu_hours_per_day

    def __post_init__(self) -> None:
        _require(self.max_total_prewarm_gpus >= 0, "max_total_prewarm_gpus must be >= 0")
        _require(0 < self.notice_namespace_share <= 1, "notice_namespace_share must be in (0, 1]")
        _require(
            0 < self.notice_namespace_gpu_share <= 1, "notice_namespace_gpu_share must be in (0, 1]"
        )
        _finite_non_negative(self.max_prewarm_gpu_hours_per_day, "max_prewarm_gpu_hours_per_day")
        _finite_non_negative(self.max_cost_per_hour, "max_cost_per_hour")
        _require(self.commitment_seconds > 0, "commitment_seconds must be > 0")


KARPENTER_BATCH_SECONDS = 10
"""Karpenter batches pending pods for about this long before it launches nodes for them."""
MIN_WAKE_SECONDS = 2
"""A decision woken by new pods (the daemon's pod watch; replay's ``wake_seconds``) comes at
least this long after the previous one: a burst of a hundred submissions costs a few ticks,
not a hundred."""


def prewarm_window_seconds(
    lead_seconds: int,
    decision_interval_seconds: int,
    *,
    batch_seconds: int = KARPENTER_BATCH_SECONDS,
) -> int:
    """How far ahead a decision must cover: the one rule for the daemon, replay and the oracle.

    Capacity asked for now is usable after ``lead_seconds`` (launch, Ready, image pull) plus
    Karpenter's batch; work that arrives just after this decision is only seen at the next one,
    ``decision_interval_seconds`` later. Prewarming for less leaves the jobs of that gap waiting
    on nodes that are still pulling.
    """
    return lead_seconds + decision_interval_seconds + batch_seconds


def covering_horizon(window_seconds: int, horizons_seconds: tuple[int, ...]) -> int:
    """The shortest forecast horizon that covers ``window_seconds``."""
    covering = [h for h in horizons_seconds if h >= window_seconds]
    _require(
        bool(covering),
        f"no forecast horizon covers the prewarm window of {window_seconds} s"
        f" (horizons {list(horizons_seconds)})",
    )
    return min(covering)


def horizon_for_lead(
    lead_seconds: int, decision_interval_seconds: int, horizons_seconds: tuple[int, ...]
) -> int:
    """The shortest forecast horizon that covers the prewarm window of a pool with this lead
    (``prewarm_window_seconds``): the horizon a pool is trained and planned for as configured."""
    window = prewarm_window_seconds(lead_seconds, decision_interval_seconds)
    return covering_horizon(window, horizons_seconds)


MIN_MEASURED_LAUNCHES = 3
"""Launches a measured lead needs before it replaces the configured one (one slow node is noise)."""


@dataclass(frozen=True)
class PlanningHorizon:
    """What a pool's forecast must cover this tick, and why."""

    horizon_seconds: int
    lead_seconds: int
    reason: str


def planning_horizon(
    *,
    configured_lead_seconds: int,
    configured_horizon_seconds: int,
    measured_lead_seconds: float | None,
    measured_launches: int,
    margin_seconds: int,
    decision_interval_seconds: int,
    horizons_seconds: tuple[int, ...],
) -> PlanningHorizon:
    """The horizon covering the pool's prewarm window with its lead as measured, not configured.

    Once ``MIN_MEASURED_LAUNCHES`` launches were measured, the lead is the measured one plus the
    configured safety margin - longer or shorter than ``lead_time`` says; the shortest forecast
    horizon covering that window is used. A window beyond every horizon takes the longest (the
    plan then aims short, and says so). Until then, the configured lead and horizon stand.
    """
    if measured_lead_seconds is None or measured_launches < MIN_MEASURED_LAUNCHES:
        return PlanningHorizon(
            configured_horizon_seconds, configured_lead_seconds, "configured lead_time"
        )
    lead = round(measured_lead_seconds) + margin_seconds
    window = prewarm_window_seconds(lead, decision_interval_seconds)
    covering = [h for h in horizons_seconds if h >= window]
    why = (
        f"measured lead {measured_lead_seconds:.0f} s over {measured_launches} launches"
        f" + {margin_seconds} s margin (configured {configured_lead_seconds} s)"
    )
    if not covering:
        longest = max(horizons_seconds)
        return PlanningHorizon(
            longest,
            lead,
            f"{why}: its {window} s window is beyond every horizon, using {longest} s",
        )
    return PlanningHorizon(min(covering), lead, why)
