"""One pool's pods, counted: real work by state (running, pending, gated) and by notice
(announced or not), and our placeholders by node - what the observer builds a pool's GPUs from.

A pod another team wrote is counted on its own: one whose request cannot be read, or asks more
than one node of its pool holds (``1Ki``, ``2T``), is passed over (named in ``passed``) - a
pending one is no demand; a bound one leaves its node busy (real work of unknown size).
``arrivals`` counts the GPUs of real pods created in the last 1, 5, 15 and 60 minutes
(``metadata.creationTimestamp``); ``recent_images`` the images those pods of the last hour ran,
most GPUs first, from pods with no ``imagePullSecrets`` only (a placeholder may pull them
without anyone's credentials).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from forecaster.actuators import labels as lbl
from forecaster.actuators.manifests import Node, Pod
from forecaster.actuators.quantities import (
    MalformedObjectError,
    UnplaceableError,
    fits_one_node,
    pod_gpus,
    timestamp_seconds,
)
from forecaster.core.cluster import ARRIVAL_WINDOWS_SECONDS, RecentArrivals, Skipped

_MALFORMED = (KeyError, TypeError, ValueError, AttributeError)
MAX_RECENT_IMAGES = 5
Announcement = Callable[[Pod], tuple[str, str] | None]
"""(source, item key) of the announced work a pod is of (``NoticeReading.announcement``)."""


@dataclass(frozen=True)
class ClusterRead:
    """What one observation read of the whole cluster, which every pool's snapshot shares."""

    nodes: list[Node]
    pods: list[Pod]
    homes: list[str | None]
    """The NodePool each pending pod waits for (``_attribute``), by position in ``pods``."""
    node_pool: dict[str, str]
    """Node name -> its NodePool."""
    now: int
    announced: Announcement


def is_placeholder(pod: Pod) -> bool:
    """Ours: a placeholder, by our labels."""
    pod_labels = pod["metadata"].get("labels") or {}
    return (
        pod_labels.get(lbl.MANAGED_BY) == lbl.MANAGER
        and pod_labels.get(lbl.ROLE) == lbl.PLACEHOLDER
    )


@dataclass
class PodTally:
    """One pool's pods, counted: what the observer builds the pool's GPUs from."""

    running: int
    pending: int
    placeholders: int
    of_announced: int
    created: list[tuple[float, int, str]]
    """(age, GPUs, uid) of the pool's real pods."""
    unannounced: set[str]
    """uids of those not of announced work (the arrivals model's)."""
    images: dict[str, int]
    """image -> GPUs of the last hour's pods that ran it."""
    used_on: dict[str, int]
    ours_on: dict[str, int]
    """our placeholders' GPUs per node ("" = still pending)."""
    busy: set[str]
    running_announced: dict[tuple[str, str], int]
    """(source, item key) -> GPUs of the bound pods of that announced item."""
    present: set[tuple[str, str]] = field(default_factory=set)
    """(source, item key) of every announced item with a pod here, in any state."""

    def announced_running(self) -> tuple[tuple[str, str, int], ...]:
        """(source, item key, GPUs) of the bound pods of announced work, by item."""
        return tuple((s, key, g) for (s, key), g in sorted(self.running_announced.items()))

    def recent_images(self) -> tuple[str, ...]:
        """The images the last hour's pods ran, most GPUs first (what placeholders pre-pull)."""
        by_gpus = sorted(self.images, key=lambda image: (-self.images[image], image))
        return tuple(by_gpus[:MAX_RECENT_IMAGES])

    def arrivals(self) -> RecentArrivals:
        """GPUs of unannounced pods created within each arrival window, and the pods."""
        return RecentArrivals(
            tuple(
                sum(g for age, g, uid in self.created if age < window and uid in self.unannounced)
                for window in ARRIVAL_WINDOWS_SECONDS
            ),
            tuple((uid, g) for age, g, uid in self.created if age < ARRIVAL_WINDOWS_SECONDS[-1]),
        )


def tally_pods(
    pool: str, resource: str, read: ClusterRead, *, node_units: int | None, passed: list[Skipped]
) -> PodTally:
    """Count the pods of ``pool`` (on its nodes, or pending for it): real work by state and
    notice, our placeholders by node. A pod whose request cannot be read or placed is passed
    over (``_units``): pending, it is no demand; bound, its node still runs real work."""
    tally = PodTally(0, 0, 0, 0, [], set(), {}, {}, {}, set(), {})
    for pod, home in zip(read.pods, read.homes, strict=True):
        node_name = pod["spec"].get("nodeName")
        if (read.node_pool.get(node_name) if node_name else home) != pool:
            continue
        gpus = _units(pod, resource, node_units=node_units, pool=pool, passed=passed)
        if gpus is None and node_name:
            tally.busy.add(node_name)  # real work of unknown size: the node is not empty
        if gpus is None:
            continue
        if node_name:
            tally.used_on[node_name] = tally.used_on.get(node_name, 0) + gpus
        if is_placeholder(pod):
            tally.placeholders += gpus
            tally.ours_on[node_name or ""] = tally.ours_on.get(node_name or "", 0) + gpus
            continue
        _count_real(tally, pod, gpus, node_name=node_name, now=read.now, announced=read.announced)
    return tally


def _count_real(
    tally: PodTally,
    pod: Pod,
    gpus: int,
    *,
    node_name: str | None,
    now: int,
    announced: Announcement,
) -> None:
    """Add one real pod (not ours) to ``tally``: running or pending, announced or not."""
    uid = _note_created(pod, gpus, now=now, created=tally.created, images=tally.images)
    announcement = announced(pod)
    is_announced = announcement is not None
    if announcement is not None:
        tally.present.add(announcement)
    if not is_announced and uid:
        tally.unannounced.add(uid)
    if node_name:
        tally.running += gpus
        tally.busy.add(node_name)
        if announcement is not None:
            running = tally.running_announced
            running[announcement] = running.get(announcement, 0) + gpus
    elif not pod["spec"].get("schedulingGates"):  # gated pods (Kueue) start no node
        tally.pending += gpus
    else:
        return
    tally.of_announced += gpus if is_announced else 0


def _units(
    pod: Pod, resource: str, *, node_units: int | None, pool: str, passed: list[Skipped]
) -> int | None:
    """The units of ``resource`` the pod asks for; None (and the pod named in ``passed``) when
    they cannot be read or one node of the pool cannot hold them (no scheduler places such a
    pod; bound anyway, by a hand-set ``nodeName``, the kubelet refuses it)."""
    try:
        return fits_one_node(
            pod_gpus(pod, resource), node_units=node_units, what="the pod", pool=pool
        )
    except (MalformedObjectError, *_MALFORMED) as exc:
        meta = pod.get("metadata") or {}
        name = f"{meta.get('namespace', '')}/{meta.get('name', '?')}"
        reason = "exceeds-node" if isinstance(exc, UnplaceableError) else "unreadable"
        passed.append(Skipped("pods", name[:300], reason, str(exc)[:300]))
        return None


def _note_created(
    pod: Pod,
    gpus: int,
    *,
    now: int,
    created: list[tuple[float, int, str]],
    images: dict[str, int],
) -> str | None:
    """Count a real GPU pod's age (arrivals) and, within the hour, its images (prewarm pulls);
    its uid when counted."""
    meta = pod["metadata"]
    stamp = meta.get("creationTimestamp")
    if not stamp or not gpus:
        return None
    age = now - timestamp_seconds(stamp)
    uid = meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}"
    created.append((age, gpus, uid))
    if age < ARRIVAL_WINDOWS_SECONDS[-1] and not pod["spec"].get("imagePullSecrets"):
        for container in pod["spec"].get("containers") or []:
            image = container.get("image")
            if image:
                images[image] = images.get(image, 0) + gpus
    return uid
