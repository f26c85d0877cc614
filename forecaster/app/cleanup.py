"""Uninstall and expiry: undo everything the daemon holds (``forecaster cleanup``).

Both find our objects by what is written on them, never through the config's pool list: our
label in our namespace (placeholder Jobs and pods, CapacityBuffers) and our record on NodePools
(``forecaster.io/original-disruption``). A pool removed from the config long ago is undone like
any other, and neither needs a config that validates - the usual reason the daemon is down is a
config it refuses. Each object is undone on its own: one that cannot be (a damaged record, a
NodePool that keeps answering 409, a buffer someone else owns) is reported on its own line and
the rest proceed; the command then exits 1, so ``kube_job_failed`` and the shipped alert fire.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from forecaster.actuators import labels
from forecaster.actuators.coordination.leases import CLEANUP_IDENTITY, fence
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import Job
from forecaster.actuators.nodepools import NodePools
from forecaster.actuators.prewarm.capacitybuffers import CapacityBuffers
from forecaster.actuators.prewarm.placeholders import Placeholders
from forecaster.core.series import iso_utc
from forecaster.errors import ForecasterError

log = logging.getLogger(__name__)


UNINSTALL_HOLD_SECONDS = 3600  # replicas stay followers this long after `cleanup`


BUFFER_DRAIN_CHECKS, BUFFER_DRAIN_SECONDS = 12, 5.0  # up to a minute for buffers to drain


@dataclass
class Undone:
    """What a cleanup changed, and what it could not undo (one line per object)."""

    changed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def attempt(self, what: str, undo: Callable[[], str | None]) -> None:
        """Undo one object; a failure is recorded against ``what`` and the rest go on."""
        try:
            line = undo()
        except ForecasterError as exc:
            self.failed.append(f"{what}: {exc}")
            log.error("cleanup: %s: %s", what, exc)
            return
        except Exception as exc:  # a malformed object of ours must not stop the others
            self.failed.append(f"{what}: {type(exc).__name__}: {exc}")
            log.exception("cleanup: %s failed on an unexpected object", what)
            return
        if line:
            self.changed.append(line)


def cleanup(
    kube: Kube,
    *,
    namespace: str,
    expired_at: int | None = None,
    wall: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    hold_seconds: int = UNINSTALL_HOLD_SECONDS,
) -> Undone:
    """Uninstall: withdraw every placeholder and buffer, restore every NodePool we touched.

    First the leader Lease is fenced (taken for ``hold_seconds``) and the old leader's deadline
    waited out, so a daemon that is still running cannot prewarm again behind our back while
    the manifests are being deleted (Helm's pre-delete hook runs before the Deployment goes);
    ``forecaster resume`` gives the Lease back. Idempotent - a second run finds nothing to
    change. Leaves the PriorityClass and the state ConfigMap to the manifests' deletion.

    With ``expired_at`` (``cleanup --expired``, the CronJob that works without the daemon):
    only what has outlived its deadline (``expire``).
    """
    if expired_at is not None:
        return expire(kube, namespace=namespace, now=expired_at)
    undone = Undone()
    wait = fence(
        kube, namespace=namespace, identity=CLEANUP_IDENTITY, hold_seconds=hold_seconds, wall=wall
    )
    if wait:
        sleep(wait)
    buffers = _buffers(kube, namespace)
    pools = []
    if buffers is not None:
        for buffer in kube.list_capacity_buffers(namespace, labels=labels.owned_selector()):
            name = buffer["metadata"]["name"]
            pool = buffer["metadata"].get("labels", {}).get(labels.POOL, name)
            pools.append(pool)
            done = f"CapacityBuffer of {pool} set to 0 replicas"
            undone.attempt(f"CapacityBuffer {namespace}/{name}", _zeroing(buffers, name, done=done))
    placeholders = Placeholders(kube, namespace=namespace, priority_class="")
    for job in placeholders.jobs(None):
        name = job["metadata"]["name"]
        undone.attempt(f"placeholder Job {namespace}/{name}", _deleting(placeholders, job))
    undone.attempt("bare placeholder pods", lambda: _legacy_pods(placeholders))
    _restore_nodepools(kube, undone, expired_before=None)
    if buffers is not None and pools:
        _remove_buffers(buffers, pools, sleep=sleep, undone=undone)
    return undone


def expire(kube: Kube, *, namespace: str, now: int) -> Undone:
    """Undo what outlived its deadline: buffers past ``expires-at`` are zeroed, NodePools past
    their pause deadline restored; placeholders expire by themselves (Jobs with deadlines)."""
    undone = Undone()
    buffers = _buffers(kube, namespace)
    if buffers is not None:
        for buffer in buffers.expired(now=now):
            name = buffer["metadata"]["name"]
            done = f"CapacityBuffer {name} expired: 0 replicas"
            undone.attempt(f"CapacityBuffer {namespace}/{name}", _zeroing(buffers, name, done=done))
    _restore_nodepools(kube, undone, expired_before=now)
    return undone


def _buffers(kube: Kube, namespace: str) -> CapacityBuffers | None:
    """Our CapacityBuffers' writer, or None where the cluster does not serve them."""
    if not kube.serves_capacity_buffers(namespace):
        return None
    return CapacityBuffers(kube, namespace=namespace, priority_class="")


def _zeroing(buffers: CapacityBuffers, name: str, *, done: str) -> Callable[[], str | None]:
    return lambda: done if buffers.zero(name) else None


def _deleting(placeholders: Placeholders, job: Job) -> Callable[[], str]:
    return lambda: f"deleted placeholder {placeholders.delete(job)}"


def _legacy_pods(placeholders: Placeholders) -> str | None:
    removed = placeholders.remove_bare_pods()
    return f"deleted bare placeholder pods {', '.join(removed)}" if removed else None


def _restore_nodepools(kube: Kube, undone: Undone, *, expired_before: int | None) -> None:
    """Every NodePool carrying our record, configured or not, each on its own."""
    nodepools = NodePools(kube)
    for name in kube.list_nodepool_names(annotated=labels.ORIGINAL_DISRUPTION):

        def restore(name: str = name) -> str | None:
            if not nodepools.restore(name, expired_before=expired_before):
                return None
            conflict = nodepools.conflicts.pop(name, None)
            done = (
                "protection expired, restored"
                if expired_before
                else "restored to its recorded original"
            )
            return f"NodePool {name}: {done}{f' ({conflict})' if conflict else ''}"

        undone.attempt(f"NodePool {name}", restore)


def _remove_buffers(
    buffers: CapacityBuffers, pools: list[str], *, sleep: Callable[[float], None], undone: Undone
) -> None:
    """Delete our zeroed buffers once the autoscaler has let their capacity go (bounded wait)."""
    waiting = list(pools)
    for attempt in range(BUFFER_DRAIN_CHECKS):
        still = []
        for pool in waiting:
            try:
                removed = buffers.remove(pool)
            except ForecasterError as exc:
                undone.failed.append(f"CapacityBuffer of {pool}: {exc}")
                continue
            if removed:
                undone.changed.append(f"CapacityBuffer of {pool} deleted (after 0 replicas)")
            elif removed is False:
                still.append(pool)
        waiting = still
        if not waiting:
            break
        if attempt < BUFFER_DRAIN_CHECKS - 1:
            sleep(BUFFER_DRAIN_SECONDS)
    undone.changed += [
        f"CapacityBuffer of {pool} left at 0 replicas: the autoscaler still reports replicas;"
        " run cleanup again to delete it"
        for pool in waiting
    ]


def still_held(kube: Kube, *, namespace: str) -> list[str]:
    """One line per pool with placeholders or buffers still held, and when each ends without
    us: what an operator needs after stopping a live run (``forecaster run --cluster``)."""
    by_pool: dict[str, list[tuple[int, int]]] = {}
    for job in Placeholders(kube, namespace=namespace, priority_class="").jobs(None):
        meta = job["metadata"]
        notes = meta.get("annotations") or {}
        created = int(notes.get(labels.CREATED_AT, 0))
        ends = created + int(job["spec"].get("activeDeadlineSeconds") or 0)
        pool = (meta.get("labels") or {}).get(labels.POOL, "?")
        by_pool.setdefault(pool, []).append((int(notes.get(labels.GPUS, 0)), ends))
    lines = [
        f"pool {pool}: {len(jobs)} placeholder Job(s), {sum(g for g, _ in jobs)} GPUs, the last"
        f" ending by {iso_utc(max(e for _, e in jobs))} without the daemon"
        for pool, jobs in sorted(by_pool.items())
    ]
    if kube.serves_capacity_buffers(namespace):
        for buffer in kube.list_capacity_buffers(namespace, labels=labels.owned_selector()):
            replicas = int(buffer["spec"].get("replicas", 0))
            if replicas:
                ends = int((buffer["metadata"].get("annotations") or {}).get(labels.EXPIRES_AT, 0))
                pool = (buffer["metadata"].get("labels") or {}).get(labels.POOL, "?")
                lines.append(
                    f"pool {pool}: CapacityBuffer {buffer['metadata']['name']} holds {replicas}"
                    f" chunk(s) until {iso_utc(ends)} (then the expiry CronJob zeroes it)"
                )
    if lines:
        lines.append("`forecaster cleanup` withdraws them now")
    return lines
