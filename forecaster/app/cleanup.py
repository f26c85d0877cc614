"""Uninstall and expiry: undo everything the daemon holds (``forecaster cleanup``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from forecaster.actuators import labels
from forecaster.actuators.actuator import Actuator, PoolActuation
from forecaster.actuators.capacitybuffers import CapacityBuffers
from forecaster.actuators.kube import Kube
from forecaster.actuators.leases import CLEANUP_IDENTITY, fence
from forecaster.actuators.nodepools import NodePools
from forecaster.actuators.placeholders import Placeholders
from forecaster.app.build import placeholder_spec
from forecaster.settings import Settings

log = logging.getLogger(__name__)


UNINSTALL_HOLD_SECONDS = 3600  # replicas stay followers this long after `cleanup`


BUFFER_DRAIN_CHECKS, BUFFER_DRAIN_SECONDS = 12, 5.0  # up to a minute for buffers to drain


def cleanup(
    settings: Settings,
    kube: Kube,
    *,
    expired_at: int | None = None,
    wall: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    hold_seconds: int = UNINSTALL_HOLD_SECONDS,
) -> list[str]:
    """Uninstall: withdraw every placeholder and buffer change, restore every NodePool we touched.

    First the leader Lease is fenced (taken for ``hold_seconds``) and the old leader's deadline
    waited out, so a daemon that is still running cannot prewarm again behind our back while
    the manifests are being deleted (Helm's pre-delete hook runs before the Deployment goes).
    Idempotent - a second run finds nothing to change. Leaves the PriorityClass and the state
    ConfigMap to ``kubectl delete -k deploy/...`` / ``helm uninstall``.

    With ``expired_at`` (``cleanup --expired``, the CronJob that works without the daemon):
    only what has outlived its deadline - buffers past ``expires-at`` are zeroed, NodePools past
    their protection deadline restored; placeholders expire by themselves (Jobs).
    """
    ph = settings.planning.placeholders
    buffers = (
        CapacityBuffers(kube, namespace=ph.namespace, priority_class=ph.priority_class)
        if kube.serves_capacity_buffers(ph.namespace)
        else None
    )
    actuator = Actuator(
        placeholders=Placeholders(kube, namespace=ph.namespace, priority_class=ph.priority_class),
        nodepools=NodePools(kube),
        buffers=buffers,
        pools={p.name: PoolActuation(placeholder_spec(settings, p)) for p in settings.pools},
    )
    if expired_at is not None:
        return expire(kube, buffers=buffers, now=expired_at)
    wait = fence(
        kube,
        namespace=ph.namespace,
        identity=CLEANUP_IDENTITY,
        hold_seconds=hold_seconds,
        wall=wall,
    )
    if wait:
        sleep(wait)
    changed = []
    for pool in settings.pools:
        changed += actuator.withdraw(pool.name)
    if buffers is not None:
        changed += _remove_buffers(buffers, [p.name for p in settings.pools], sleep=sleep)
    return changed


def _remove_buffers(
    buffers: CapacityBuffers, pools: list[str], *, sleep: Callable[[float], None]
) -> list[str]:
    """Delete our zeroed buffers once the autoscaler has let their capacity go (bounded wait)."""
    changed, waiting = [], list(pools)
    for attempt in range(BUFFER_DRAIN_CHECKS):
        still = []
        for pool in waiting:
            removed = buffers.remove(pool)
            if removed:
                changed.append(f"CapacityBuffer of {pool} deleted (after 0 replicas)")
            elif removed is False:
                still.append(pool)
        waiting = still
        if not waiting:
            break
        if attempt < BUFFER_DRAIN_CHECKS - 1:
            sleep(BUFFER_DRAIN_SECONDS)
    changed += [
        f"CapacityBuffer of {pool} left at 0 replicas: the autoscaler still reports replicas;"
        " run cleanup again to delete it"
        for pool in waiting
    ]
    return changed


def expire(kube: Kube, *, buffers: CapacityBuffers | None, now: int) -> list[str]:
    """Undo what outlived its deadline (see ``cleanup``).

    Every NodePool carrying our record is looked at, configured or not, so removing a pool from
    the config does not strand its protection.
    """
    changed = []
    if buffers is not None:
        zeroed = buffers.zero_expired(now=now)
        changed += [f"CapacityBuffer {name} expired: 0 replicas" for name in zeroed]
    nodepools = NodePools(kube)
    for name in kube.list_nodepool_names(annotated=labels.ORIGINAL_DISRUPTION):
        if nodepools.restore(name, expired_before=now):
            changed.append(f"NodePool {name}: protection expired, restored")
    return changed
