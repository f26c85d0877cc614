"""Which prewarm backend the cluster gets: CapacityBuffers where an autoscaler serves them.

``planning.actuation`` is ``auto`` (default) or a registered backend's name (``registry``:
``placeholders``, ``capacitybuffer``, any other registered); a pool may still name its own
``backend``. An explicit choice the cluster does not serve refuses to start. ``auto`` prefers
CapacityBuffers (headroom without real pods: no preemption churn, nothing for the scheduler to
fight) and falls back to placeholder pods when

* the API server does not serve ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffers (no CRD, or
  another version), or
* it serves them but no autoscaler acts on them: a buffer of ours has asked for chunks for
  ``UNSERVED_AFTER_SECONDS`` and still carries no status condition (Karpenter needs its
  ``CapacityBuffer`` feature gate, Cluster Autoscaler ``--capacity-buffer-controller-enabled``
  and ``--capacity-buffer-pod-injection-enabled``). A CRD alone provisions nothing.

The choice is re-made every ``resync_seconds`` and stated with its reason on
``/api/v1/status`` and by ``forecaster doctor``. Detection only reads.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import Object
from forecaster.actuators.prewarm.buffer_backend import AUTOSCALER_HINT
from forecaster.actuators.prewarm.registry import make_backend
from forecaster.actuators.quantities import timestamp_seconds
from forecaster.errors import ActuationError, ConfigError
from forecaster.registry import AUTO_BACKEND

log = logging.getLogger(__name__)
AUTO = AUTO_BACKEND
UNSERVED_AFTER_SECONDS = 300


@dataclass(frozen=True)
class BackendChoice:
    """The backend pools without their own ``backend`` use, and why."""

    backend: str
    """A registered backend's name."""
    reason: str


def choose_backend(kube: Kube, namespace: str, *, actuation: str, now: int) -> BackendChoice:
    """Decide from what the cluster serves and how our buffers fare (see module docstring)."""
    if actuation != AUTO:
        why = make_backend(actuation, kube, namespace, "").served()
        if why is not None:
            raise ConfigError(f"planning.actuation: {actuation}, but {why}")
        return BackendChoice(actuation, f"configured: actuation {actuation}")
    if not kube.serves_capacity_buffers(namespace):
        return BackendChoice(
            "placeholders",
            "auto: the cluster does not serve autoscaling.x-k8s.io/v1beta1 CapacityBuffers",
        )
    buffers = kube.list_capacity_buffers(namespace, labels=lbl.owned_selector())
    for buffer in buffers:
        conditions = (buffer.get("status") or {}).get("conditions") or []
        waited = now - _created(buffer)
        asked = int(buffer["spec"].get("replicas", 0)) > 0
        if asked and not conditions and waited >= UNSERVED_AFTER_SECONDS:
            return BackendChoice(
                "placeholders",
                f"auto: CapacityBuffers are served but no autoscaler acts on them"
                f" ({buffer['metadata']['name']} has no status after {waited} s;"
                f" {AUTOSCALER_HINT})",
            )
    acting = [b for b in buffers if (b.get("status") or {}).get("conditions")]
    if acting:
        return BackendChoice(
            "capacitybuffer",
            "auto: CapacityBuffers are served and an autoscaler reports on"
            f" {acting[0]['metadata']['name']}",
        )
    return BackendChoice(
        "capacitybuffer",
        "auto: CapacityBuffers are served (v1beta1); placeholders take over if no autoscaler"
        f" reports on our buffers within {UNSERVED_AFTER_SECONDS} s",
    )


class BackendDetector:
    """``choose_backend``, re-made every ``resync_seconds`` (the first call decides)."""

    def __init__(
        self, kube: Kube, namespace: str, actuation: str, *, resync_seconds: int = 300
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.actuation = actuation
        self.resync_seconds = resync_seconds
        self.choice: BackendChoice | None = None
        self._at: int | None = None

    def current(self, now: int) -> BackendChoice:
        """The choice in force at ``now`` (re-detected when due; a read error keeps the last)."""
        if self.choice is None or self._at is None or now - self._at >= self.resync_seconds:
            previous = self.choice
            try:
                self.choice = choose_backend(
                    self.kube, self.namespace, actuation=self.actuation, now=now
                )
            except ActuationError as exc:
                if previous is None:
                    raise
                log.error("prewarm backend: could not re-detect, keeping %s: %s", previous, exc)
            self._at = now
            choice = self.choice
            if choice is not None and (previous is None or previous.backend != choice.backend):
                log.warning("prewarm backend: %s (%s)", choice.backend, choice.reason)
        assert self.choice is not None
        return self.choice


def _created(obj: Object) -> int:
    stamp = obj["metadata"].get("creationTimestamp")
    if not stamp:
        return 0
    return int(timestamp_seconds(stamp))
