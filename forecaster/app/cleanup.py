"""Uninstall and expiry: undo everything the daemon holds (``forecaster cleanup``).

Both find our objects by what is written on them, never through the config's pool list: our
label in the placeholders' namespace (whatever each registered prewarm backend holds: placeholder
Jobs and pods, CapacityBuffers, ...) and our record on NodePools
(``forecaster.io/original-disruption``). A pool removed from the config long ago is undone like
any other, and neither needs a config that validates - the usual reason the daemon is down is a
config it refuses. Each object is undone on its own: one that cannot be (a damaged record, a
NodePool that keeps answering 409, a buffer someone else owns) is reported on its own line and
the rest proceed; the command then exits 1, so ``kube_job_failed`` and the shipped alert fire.
Discovery and listing are isolated the same way, per backend and per kind: CapacityBuffers that
cannot be listed (a 500, a 403, a hang) are one failed line, and every NodePool is still
restored - and the other way round.

Earlier versions kept placeholders in forecaster's own namespace; both commands also
withdraw whatever of ours is left there (``MOVED``), so an upgrade leaves no orphan behind: the
expiry CronJob does it within minutes of the upgrade, uninstall in any case.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from forecaster.actuators import labels
from forecaster.actuators.coordination.leases import CLEANUP_IDENTITY, fence
from forecaster.actuators.kube import Kube
from forecaster.actuators.nodepools import NodePools
from forecaster.actuators.prewarm.base import PrewarmBackend
from forecaster.actuators.prewarm.registry import make_backends, served_backends
from forecaster.actuators.undo import Undone

log = logging.getLogger(__name__)
__all__ = ["Undone", "cleanup", "expire", "still_held"]


UNINSTALL_HOLD_SECONDS = 3600  # replicas stay followers this long after `cleanup`


MOVED = "left in forecaster's own namespace by an earlier version"


def cleanup(
    kube: Kube,
    *,
    namespace: str,
    placeholders: str,
    expired_at: int | None = None,
    wall: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    hold_seconds: int = UNINSTALL_HOLD_SECONDS,
) -> Undone:
    """Uninstall: withdraw every backend's prewarm, restore every NodePool we touched.

    First the leader Lease is fenced (taken for ``hold_seconds``) and the old leader's deadline
    waited out, so a daemon that is still running cannot prewarm again behind our back while
    the manifests are being deleted (Helm's pre-delete hook runs before the Deployment goes);
    ``forecaster resume`` gives the Lease back. Idempotent - a second run finds nothing to
    change. Leaves the PriorityClass and the state ConfigMap to the manifests' deletion.

    ``namespace`` is forecaster's own (the Lease), ``placeholders`` the placeholders' one.
    With ``expired_at`` (``cleanup --expired``, the CronJob that works without the daemon):
    only what has outlived its deadline (``expire``).
    """
    if expired_at is not None:
        return expire(kube, namespace=namespace, placeholders=placeholders, now=expired_at)
    undone = Undone()
    wait = fence(
        kube, namespace=namespace, identity=CLEANUP_IDENTITY, hold_seconds=hold_seconds, wall=wall
    )
    if wait:
        sleep(wait)
    backends = _served(kube, placeholders, undone) + _moved(kube, namespace, placeholders, undone)
    _each(undone, backends, lambda backend: backend.uninstall(undone))
    _restore_nodepools(kube, undone, expired_before=None)
    _each(undone, backends, lambda backend: backend.settle(undone, sleep))
    return undone


def expire(kube: Kube, *, namespace: str, placeholders: str, now: int) -> Undone:
    """Undo what outlived its deadline: each backend's own (buffers past ``expires-at`` are
    zeroed; placeholders expire by themselves, Jobs with deadlines), NodePools past their pause
    deadline restored; and withdraw whatever of ours an earlier version left in forecaster's
    own namespace (``MOVED``: no daemon renews it any more). It never waits: a buffer it zeroed
    that the autoscaler has not let go yet is deleted by a later run."""
    undone = Undone()
    _each(
        undone, _served(kube, placeholders, undone), lambda backend: backend.expire(undone, now=now)
    )
    moved = _moved(kube, namespace, placeholders, undone)
    _each(undone, moved, lambda backend: backend.uninstall(undone))
    _restore_nodepools(kube, undone, expired_before=now)
    _each(undone, moved, lambda backend: backend.settle(undone, _no_wait))
    return undone


def _no_wait(seconds: float) -> None:
    """The expiry CronJob's ``sleep``: it runs every few minutes and never waits."""


def _served(kube: Kube, namespace: str, undone: Undone) -> list[tuple[str, PrewarmBackend]]:
    """Every registered backend the cluster serves in ``namespace`` (what it does not serve
    holds nothing); one whose discovery fails is a failed line of its own, and the others go
    on."""
    served: list[tuple[str, PrewarmBackend]] = []
    for name, backend in make_backends(kube, namespace, "").items():

        def discover(name: str = name, backend: PrewarmBackend = backend) -> None:
            if backend.served() is None:
                served.append((name, backend))

        undone.attempt(f"prewarm backend {name}", discover)
    return served


def _moved(
    kube: Kube, namespace: str, placeholders: str, undone: Undone
) -> list[tuple[str, PrewarmBackend]]:
    """The backends over forecaster's own namespace, where earlier versions held prewarm
    (none when the placeholders are configured there, which the settings refuse)."""
    if namespace == placeholders:
        return []
    return [(f"{name} ({MOVED})", b) for name, b in _served(kube, namespace, undone)]


def _each(
    undone: Undone,
    backends: list[tuple[str, PrewarmBackend]],
    step: Callable[[PrewarmBackend], None],
) -> None:
    """``step`` on every backend, each on its own: one that fails (its list refused or hung)
    is a failed line, and the others - and the NodePools after them - still go."""
    for name, backend in backends:

        def run(backend: PrewarmBackend = backend) -> None:
            step(backend)

        undone.attempt(f"prewarm backend {name}", run)


def _restore_nodepools(kube: Kube, undone: Undone, *, expired_before: int | None) -> None:
    """Every NodePool carrying our record, configured or not, each on its own (a NodePool list
    that fails is one failed line)."""
    names: list[str] = []
    undone.attempt(
        "NodePools",
        lambda: names.extend(kube.list_nodepool_names(annotated=labels.ORIGINAL_DISRUPTION)),
    )
    nodepools = NodePools(kube)
    for name in names:

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


def still_held(kube: Kube, *, placeholders: str) -> list[str]:
    """One line per pool with prewarm still held, and when each ends without us: what an
    operator needs after stopping a live run (``forecaster run --cluster``)."""
    served = served_backends(kube, placeholders, "")[0]
    lines = [line for backend in served.values() for line in backend.still_held()]
    if lines:
        lines.append("`forecaster cleanup` withdraws them now")
    return lines
