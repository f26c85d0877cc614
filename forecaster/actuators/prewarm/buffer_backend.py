"""The CapacityBuffer backend: prewarm the autoscaler holds itself (``capacitybuffers``).

Served where the API server serves ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffers. Its
capacity shows no pod of ours, so ``held_gpus`` charges replicas x chunk GPUs to the ledger. A
buffer has no TTL of its own: expiry zeroes those past ``forecaster.io/expires-at``. Uninstall
zeroes every buffer of ours first and deletes each only once the autoscaler has let its capacity
go (``settle``, after the NodePools are restored).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from forecaster.actuators import labels
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import CapacityBuffer
from forecaster.actuators.prewarm.base import Prewarm
from forecaster.actuators.prewarm.capacitybuffers import CapacityBuffers
from forecaster.actuators.prewarm.placeholders import Applied, PlaceholderSpec
from forecaster.actuators.undo import Undone
from forecaster.core.series import iso_utc
from forecaster.errors import ForecasterError

BUFFER_DRAIN_CHECKS, BUFFER_DRAIN_SECONDS = 12, 5.0  # up to a minute for buffers to drain
AUTOSCALER_HINT = (
    "Karpenter needs the CapacityBuffer feature gate, Cluster Autoscaler"
    " --capacity-buffer-controller-enabled and --capacity-buffer-pod-injection-enabled"
)


class CapacityBufferBackend:
    """``PrewarmBackend`` over ``CapacityBuffers``."""

    name = "capacitybuffer"

    def __init__(self, buffers: CapacityBuffers) -> None:
        self.buffers = buffers
        self._zeroed: list[str] = []  # pools uninstall zeroed, deleted by settle

    @classmethod
    def make(cls, kube: Kube, namespace: str, priority_class: str) -> CapacityBufferBackend:
        """The registry's maker."""
        return cls(CapacityBuffers(kube, namespace=namespace, priority_class=priority_class))

    def served(self) -> str | None:
        if self.buffers.kube.serves_capacity_buffers(self.buffers.namespace):
            return None
        return (
            "the cluster does not serve autoscaling.x-k8s.io/v1beta1 CapacityBuffers"
            f" ({AUTOSCALER_HINT})"
        )

    def converge(self, asked: Prewarm) -> Applied:
        self.buffers.apply(
            asked.spec, replicas=asked.units, now=asked.now, limit_gpus=asked.limit_gpus
        )
        return Applied()

    def withdraw(self, spec: PlaceholderSpec, *, now: int) -> Applied:
        self.buffers.apply(spec, replicas=0, now=now)
        return Applied()

    def status(self, pool: str) -> str | None:
        return self.buffers.describe(pool)

    def held_gpus(self) -> Mapping[str, int]:
        """Replicas x chunk GPUs of each of our buffers, by pool."""
        held: dict[str, int] = {}
        for buffer in self._ours():
            annotations = buffer["metadata"].get("annotations") or {}
            pool = (buffer["metadata"].get("labels") or {}).get(labels.POOL)
            if pool is not None:
                gpus = int(buffer["spec"].get("replicas", 0)) * int(annotations.get(labels.GPUS, 0))
                held[pool] = held.get(pool, 0) + gpus
        return held

    def uninstall(self, undone: Undone) -> None:
        namespace = self.buffers.namespace
        for buffer in self._ours():
            name = buffer["metadata"]["name"]
            pool = buffer["metadata"].get("labels", {}).get(labels.POOL, name)
            self._zeroed.append(pool)
            done = f"CapacityBuffer of {pool} set to 0 replicas"
            undone.attempt(f"CapacityBuffer {namespace}/{name}", self._zeroing(name, done=done))

    def settle(self, undone: Undone, sleep: Callable[[float], None]) -> None:
        zeroed, self._zeroed = self._zeroed, []
        if zeroed:
            remove_drained(self.buffers, zeroed, sleep=sleep, undone=undone)

    def expire(self, undone: Undone, *, now: int) -> None:
        for buffer in self.buffers.expired(now=now):
            name = buffer["metadata"]["name"]
            done = f"CapacityBuffer {name} expired: 0 replicas"
            undone.attempt(
                f"CapacityBuffer {self.buffers.namespace}/{name}", self._zeroing(name, done=done)
            )

    def still_held(self) -> list[str]:
        lines = []
        for buffer in self._ours():
            replicas = int(buffer["spec"].get("replicas", 0))
            if replicas:
                ends = int((buffer["metadata"].get("annotations") or {}).get(labels.EXPIRES_AT, 0))
                pool = (buffer["metadata"].get("labels") or {}).get(labels.POOL, "?")
                lines.append(
                    f"pool {pool}: CapacityBuffer {buffer['metadata']['name']} holds {replicas}"
                    f" chunk(s) until {iso_utc(ends)} (then the expiry CronJob zeroes it)"
                )
        return lines

    def _ours(self) -> list[CapacityBuffer]:
        return self.buffers.kube.list_capacity_buffers(
            self.buffers.namespace, labels=labels.owned_selector()
        )

    def _zeroing(self, name: str, *, done: str) -> Callable[[], str | None]:
        return lambda: done if self.buffers.zero(name) else None


def remove_drained(
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
