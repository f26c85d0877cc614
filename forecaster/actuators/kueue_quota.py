"""A ClusterQueue's quota on a pool's flavors: what Kueue's room (``observe.kueue``) and its
pending workloads' notice (``notice.kueue_pending``) both read, apart from either."""

from __future__ import annotations

from typing import TYPE_CHECKING

from forecaster.actuators.quantities import gpu_quantity
from forecaster.core.kueue import QueueQuota

if TYPE_CHECKING:  # the notice sources (and so the CLI's parser) use it, not the client
    from forecaster.actuators.kube import Obj


def queue_quota(cq: Obj, flavors: set[str], resource: str) -> QueueQuota | None:
    """A ClusterQueue's quota of ``resource`` on ``flavors`` and what it has reserved; None
    when it holds none there."""
    spec = cq.get("spec", {})
    nominal, borrowing, limited, any_quota = 0, 0, True, False
    for group in spec.get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            if flavor.get("name") not in flavors:
                continue
            for quota in flavor.get("resources") or []:
                if quota.get("name") != resource:
                    continue
                any_quota = True
                nominal += gpu_quantity(quota.get("nominalQuota", 0))
                if "borrowingLimit" in quota:
                    borrowing += gpu_quantity(quota["borrowingLimit"])
                else:
                    limited = False
    if not any_quota:
        return None
    status = cq.get("status") or {}
    used = sum(
        gpu_quantity(r.get("total", 0))
        for usage in status.get("flavorsReservation") or status.get("flavorsUsage") or []
        if usage.get("name") in flavors
        for r in usage.get("resources") or []
        if r.get("name") == resource
    )
    cohort = spec.get("cohortName") or spec.get("cohort") or None
    return QueueQuota(cq["metadata"]["name"], cohort, nominal, borrowing if limited else None, used)
