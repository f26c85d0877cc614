"""A watch-fed cache of the cluster's live pods that are not ours: the fast signal, cheaply.

Without it every tick lists every live pod of the cluster (every 15 s, all namespaces). With
it the API server sends each change once, within a second, and a new pending GPU pod can wake
the reconcile loop at once (``on_arrival``) instead of waiting for the next tick.

**What is cached, and what never is.** Only pods *without* our ``managed-by`` label. The
observer still lists our own pods (placeholders) fresh at every tick, label-selected: the caps
charge what we hold, and a cache lagging behind our own writes could under-count it - the
problem the ReplicaSet controller solves with "expectations". Not caching our own writes avoids
it. (Placeholder slots are named, so a create can never duplicate one either way.)

**What is kept of each pod.** Everything but the fields no reader uses and that make most of
a pod's size (``slim``): ``managedFields``, volumes, and the containers' environment, mounts,
probes, commands and statuses. Thousands of pods are held for as long as the daemon runs.

**When the cache is trusted.** ``pods()`` returns it only while it is in sync: built by a full
list and kept by a watch that has reported (an event or a BOOKMARK) within
``stale_after_seconds``. After any failure - a broken stream, 410 Gone, an API error - it returns
None until a new list succeeds, and the observer lists as it did without a watch. The watch can
make the daemon faster; it cannot make it act on a stale view for longer than that bound.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import cast

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import Pod
from forecaster.actuators.quantities import MalformedObjectError, accelerators
from forecaster.errors import ActuationError

log = logging.getLogger(__name__)
LIVE_PODS = "status.phase!=Succeeded,status.phase!=Failed"
"""Field selector of the pods that hold or wait for capacity."""
NOT_OURS = f"{lbl.MANAGED_BY}!={lbl.MANAGER}"
OURS = f"{lbl.MANAGED_BY}={lbl.MANAGER}"
WATCH_SECONDS = 300
"""Each watch request asks the server to end the stream after this long; we then resume."""
STALE_AFTER_SECONDS = 90
"""No event and no BOOKMARK for this long: the stream may be dead, the cache is not trusted.
(The API server sends a BOOKMARK to an idle watch about every minute.)"""
MAX_BACKOFF_SECONDS = 30.0
UNUSED_CONTAINER_FIELDS = (
    "env",
    "envFrom",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "command",
    "args",
)
UNUSED_STATUS_FIELDS = ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses")
Key = tuple[str, str]


class PodWatch:
    """List, then watch, the live pods not ours; ``pods()`` while in sync, else None."""

    def __init__(
        self,
        kube: Kube,
        *,
        on_arrival: Callable[[str], None] | None = None,
        watch_seconds: int = WATCH_SECONDS,
        stale_after_seconds: float = STALE_AFTER_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``on_arrival``: called (from the watch thread, with ``namespace/name``) when a new
        pending pod requesting GPUs appears - the loop's cue to decide now."""
        self.kube = kube
        self.on_arrival = on_arrival
        self.watch_seconds = watch_seconds
        self.stale_after_seconds = stale_after_seconds
        self.monotonic = monotonic
        self._pods: dict[Key, Pod] = {}
        self._version: str | None = None  # None: not in sync, list before watching
        self._heard = -float("inf")  # monotonic time of the last list, event or bookmark
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.relists = 0
        """Full lists so far (the first one, then one after each failure)."""

    # ---- what the observer reads -----------------------------------------------------------
    def pods(self) -> list[Pod] | None:
        """The live pods not ours, or None when the cache cannot be trusted (list instead)."""
        with self._lock:
            if self._version is None:
                return None
            if self.monotonic() - self._heard > self.stale_after_seconds:
                return None
            return list(self._pods.values())

    # ---- keeping it in sync -----------------------------------------------------------------
    def start(self) -> None:
        """Run ``run`` on a daemon thread (it ends with the process or ``stop``)."""
        self._thread = threading.Thread(target=self.run, name="pod-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop after the current stream returns (at most ``watch_seconds``); not waited for."""
        self._stop.set()

    def run(self) -> None:
        """Sync and watch until ``stop``, relisting after any failure, with backoff."""
        backoff = 1.0
        while not self._stop.is_set():
            try:
                self.sync()
                backoff = 1.0
            except ActuationError as exc:  # ``sync`` has marked the cache out of sync
                log.warning(
                    "pod watch: out of sync (%s; relisting in %.0f s); ticks list the pods"
                    " meanwhile",
                    exc,
                    backoff,
                )
                self._stop.wait(backoff)
                backoff = min(MAX_BACKOFF_SECONDS, backoff * 2)

    def sync(self) -> None:
        """List if out of sync, then follow one watch stream to its end.

        Raises ``ActuationError`` (``WatchExpiredError`` included) after marking the cache out
        of sync, so that nothing reads it until the next list.
        """
        try:
            if self._version is None:
                self.relist()
            assert self._version is not None
            for event in self.kube.watch_pods(
                resource_version=self._version,
                labels=NOT_OURS,
                fields=LIVE_PODS,
                timeout_seconds=self.watch_seconds,
            ):
                self._apply(event)
                if self._stop.is_set():
                    return
        except ActuationError:
            with self._lock:
                self._version = None
            raise

    def relist(self) -> None:
        """List the live pods not ours: the cache is in sync from here (a watch resumes after)."""
        pods, version = self.kube.list_pods_versioned(labels=NOT_OURS, fields=LIVE_PODS)
        with self._lock:
            self._pods = {_key(p): slim(p) for p in pods}
            self._version = version
            self._heard = self.monotonic()
        self.relists += 1
        log.info("pod watch: in sync with %d live pods at resourceVersion %s", len(pods), version)

    def _apply(self, event: dict[str, object]) -> None:
        kind, obj = event.get("type"), event.get("object")
        if not isinstance(obj, dict) or not isinstance(obj.get("metadata"), dict):
            raise ActuationError(f"pod watch: malformed event {str(event)[:200]}")
        pod = cast(Pod, obj)
        arrived = False
        with self._lock:
            self._heard = self.monotonic()
            self._version = str(pod["metadata"].get("resourceVersion") or self._version)
            if kind == "BOOKMARK":
                return
            key = _key(pod)
            if kind == "DELETED":
                self._pods.pop(key, None)
            elif kind in ("ADDED", "MODIFIED"):
                arrived = key not in self._pods and _pending_gpu_pod(pod)
                self._pods[key] = slim(pod)
            else:
                raise ActuationError(f"pod watch: unknown event type {kind!r}")
        if arrived and self.on_arrival is not None:
            self.on_arrival("/".join(key))


def slim(pod: Pod) -> Pod:
    """The pod without the fields no reader of the cache uses (see the module docstring)."""
    metadata = {k: v for k, v in pod["metadata"].items() if k != "managedFields"}
    spec: dict[str, object] = {k: v for k, v in (pod.get("spec") or {}).items() if k != "volumes"}
    for group in ("containers", "initContainers"):
        containers = cast(list[dict[str, object]], spec.get(group) or [])
        if containers:
            spec[group] = [
                {k: v for k, v in c.items() if k not in UNUSED_CONTAINER_FIELDS} for c in containers
            ]
    status = {k: v for k, v in (pod.get("status") or {}).items() if k not in UNUSED_STATUS_FIELDS}
    return cast(Pod, {**pod, "metadata": metadata, "spec": spec, "status": status})


def _key(pod: Pod) -> Key:
    return (str(pod["metadata"].get("namespace", "")), str(pod["metadata"]["name"]))


def _pending_gpu_pod(pod: Pod) -> bool:
    try:
        phase = (pod.get("status") or {}).get("phase")
        # no phase yet: just created; any accelerator a pool may count (MIG, AMD, Neuron ...)
        return phase in (None, "Pending") and bool(accelerators(pod))
    except (MalformedObjectError, KeyError, TypeError, ValueError):
        return False  # the observer reports a malformed pod; it wakes nothing


def live_pods(kube: Kube, watched: PodWatch | None) -> list[Pod]:
    """The live pods of the cluster: the watch's cache plus a fresh list of ours while the
    watch is in sync, else one list of all (see the module docstring)."""
    cached = watched.pods() if watched is not None else None
    if cached is None:
        return kube.list_pods(fields=LIVE_PODS)
    return cached + kube.list_pods(labels=OURS, fields=LIVE_PODS)
