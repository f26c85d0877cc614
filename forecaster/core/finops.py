"""What prewarm cost and bought over the last day, per pool: the figures FinOps teams report.

Input is one ``SpendPoint`` per tick (what the observer saw and what acting did); each point's
GPU counts are held until the next point (a step function, as the spend ledger charges), the
last one for at most ``max_step_seconds``. Out come, per pool:

* GPU-hours of the pool's nodes (what the cloud bills for the pool), of real pods running on
  them (used), and of prewarm held because of us (``billed_gpus``);
* prewarm that ended unused (expired, withdrawn, renewed) versus taken by real pods, in
  GPU-hours and dollars at the pool's price;
* **cost per used GPU-hour**: node cost / GPU-hours real pods used - the figure that idle GPUs
  and unused prewarm inflate;
* an **estimate of wait removed**: each GPU of prewarm a real pod took saved it a node launch,
  i.e. the pool's lead time. It is an estimate (the pod might have fit elsewhere); the replay
  measures the real counterfactual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SpendPoint:
    """One tick of one pool."""

    at: int
    node_gpus: int
    """GPUs of the pool's nodes, Ready or launching (billed by the cloud)."""
    running_gpus: int
    """GPUs real pods run on."""
    billed_prewarm_gpus: int
    """GPUs billed because of us (``PoolSnapshot.billed_gpus``)."""
    wasted_gpu_hours: float = 0.0
    """Prewarm that ended unused since the previous tick."""
    used_prewarm_gpus: int = 0
    """GPUs of prewarm real pods took since the previous tick."""


@dataclass(frozen=True)
class PoolSpend:
    """A pool's last day of spend (see the module docstring)."""

    node_gpu_hours: float
    used_gpu_hours: float
    prewarm_gpu_hours: float
    wasted_gpu_hours: float
    used_prewarm_gpus: int
    price_per_gpu_hour: float
    lead_seconds: int

    @property
    def prewarm_cost(self) -> float:
        """Dollars of prewarm."""
        return self.prewarm_gpu_hours * self.price_per_gpu_hour

    @property
    def wasted_cost(self) -> float:
        """Dollars of prewarm that ended unused (never more than the prewarm cost)."""
        return min(self.wasted_gpu_hours, self.prewarm_gpu_hours) * self.price_per_gpu_hour

    @property
    def used_prewarm_cost(self) -> float:
        """Dollars of prewarm that real pods used."""
        return self.prewarm_cost - self.wasted_cost

    @property
    def node_cost(self) -> float:
        """Dollars of the pool's nodes."""
        return self.node_gpu_hours * self.price_per_gpu_hour

    @property
    def cost_per_used_gpu_hour(self) -> float | None:
        """Node dollars per GPU-hour real pods used; None with no use at all."""
        if self.used_gpu_hours <= 0:
            return None
        return self.node_cost / self.used_gpu_hours

    @property
    def wait_removed_gpu_minutes(self) -> float:
        """Estimate: GPUs of prewarm taken by real pods x the lead time each was spared."""
        return self.used_prewarm_gpus * self.lead_seconds / 60


def pool_spend(
    points: Sequence[SpendPoint],
    *,
    since: int,
    price_per_gpu_hour: float,
    lead_seconds: int,
    max_step_seconds: int,
) -> PoolSpend:
    """Integrate ``points`` (in time order) from ``since`` on."""
    node = used = prewarm = wasted = 0.0
    taken = 0
    for i, point in enumerate(points):
        if point.at < since:
            continue
        wasted += point.wasted_gpu_hours
        taken += point.used_prewarm_gpus
        following = points[i + 1].at if i + 1 < len(points) else point.at  # last: no span yet
        hours = min(max(0, following - point.at), max_step_seconds) / 3600
        node += point.node_gpus * hours
        used += point.running_gpus * hours
        prewarm += point.billed_prewarm_gpus * hours
    return PoolSpend(node, used, prewarm, wasted, taken, price_per_gpu_hour, lead_seconds)
