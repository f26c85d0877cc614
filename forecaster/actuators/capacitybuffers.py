"""Prewarm through Karpenter's own CapacityBuffer (autoscaling.x-k8s.io/v1beta1) instead of pods.

Per pool we own a PodTemplate ``forecaster-<pool>`` (the shape of one chunk: the same GPU request,
NodePool selector and tolerations as a placeholder) and a CapacityBuffer of the same name that
references it; prewarm is applied by merge-patching ``spec.replicas``. Karpenter (>= 1.14 with
the CapacityBuffer gate) then keeps that many chunks of headroom itself. Detected at start-up
with ``Kube.serves_capacity_buffers``.
"""

from __future__ import annotations

import contextlib
from typing import Any

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import ConflictError, Kube
from forecaster.actuators.placeholders import PlaceholderSpec, placeholder_pod
from forecaster.errors import ActuationError

Obj = dict[str, Any]
API_VERSION = "autoscaling.x-k8s.io/v1beta1"


def buffer_name(pool: str) -> str:
    """Name of the PodTemplate and CapacityBuffer of ``pool``."""
    return f"forecaster-{pool}"


class CapacityBuffers:
    """Owns one CapacityBuffer (and its PodTemplate) per pool."""

    def __init__(self, kube: Kube, *, namespace: str, priority_class: str) -> None:
        self.kube = kube
        self.namespace = namespace
        self.priority_class = priority_class

    def replicas(self, pool: str) -> int:
        """Current ``spec.replicas`` of the pool's buffer (0 if it does not exist)."""
        buffer = self.kube.get_capacity_buffer(self.namespace, buffer_name(pool))
        return int(buffer["spec"].get("replicas", 0)) if buffer else 0

    def apply(self, spec: PlaceholderSpec, *, replicas: int) -> bool:
        """Make the buffer hold ``replicas`` chunks; True if anything was written."""
        name = buffer_name(spec.pool)
        buffer = self.kube.get_capacity_buffer(self.namespace, name)
        if buffer is None:
            if replicas == 0:
                return False
            self._ensure_template(spec)
            self.kube.create_capacity_buffer(self.namespace, self._buffer(spec, replicas))
            return True
        if buffer["metadata"].get("labels", {}).get(lbl.MANAGED_BY) != lbl.MANAGER:
            raise ActuationError(f"CapacityBuffer {self.namespace}/{name} exists but is not ours")
        if int(buffer["spec"].get("replicas", 0)) == replicas:
            return False
        patch = {
            "metadata": {"resourceVersion": buffer["metadata"]["resourceVersion"]},
            "spec": {"replicas": replicas},
        }
        self.kube.patch_capacity_buffer(self.namespace, name, patch)
        return True

    def _ensure_template(self, spec: PlaceholderSpec) -> None:
        name = buffer_name(spec.pool)
        if self.kube.get_pod_template(self.namespace, name) is not None:
            return
        pod = placeholder_pod(
            spec, namespace=self.namespace, priority_class=self.priority_class, slot=0, now=0
        )
        template = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {lbl.MANAGED_BY: lbl.MANAGER, lbl.POOL: spec.pool},
            },
            "template": {
                "metadata": {"labels": {lbl.MANAGED_BY: lbl.MANAGER, lbl.POOL: spec.pool}},
                "spec": {k: v for k, v in pod["spec"].items() if k != "activeDeadlineSeconds"},
            },
        }
        with contextlib.suppress(ConflictError):
            self.kube.create_pod_template(self.namespace, template)

    def _buffer(self, spec: PlaceholderSpec, replicas: int) -> Obj:
        return {
            "apiVersion": API_VERSION,
            "kind": "CapacityBuffer",
            "metadata": {
                "name": buffer_name(spec.pool),
                "namespace": self.namespace,
                "labels": {lbl.MANAGED_BY: lbl.MANAGER, lbl.POOL: spec.pool},
            },
            "spec": {"podTemplateRef": {"name": buffer_name(spec.pool)}, "replicas": replicas},
        }
