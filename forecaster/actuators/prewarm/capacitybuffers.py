"""Prewarm through Karpenter's own CapacityBuffer (autoscaling.x-k8s.io/v1beta1) instead of pods.

Per pool we own a PodTemplate ``forecaster-<pool>`` (the shape of one chunk: the same GPU request,
NodePool selector and tolerations as a placeholder) and a CapacityBuffer of the same name that
references it; prewarm is applied by merge-patching ``spec.replicas``. The PodTemplate is checked
before every use: one of that name without our label is someone else's and is refused (an
actuation error naming it: the buffer would hold whatever shape they wrote, charged as ours); one
of ours whose shape no longer matches the pool (its GPUs per chunk, resource, images) is replaced,
and the buffer's ``forecaster.io/gpus`` - what ``held_gpus`` charges per replica - follows it.
Karpenter (>= 1.14 with the CapacityBuffer gate) then keeps that many chunks of headroom
itself. Detected at start-up with ``Kube.serves_capacity_buffers``.

A buffer has no TTL of its own, so every write stamps ``forecaster.io/expires-at`` (now + the
placeholder TTL, renewed when less than half is left); past it, ``forecaster cleanup --expired``
(a CronJob, independent of the daemon and of its config) sets ``replicas`` to 0 - zero first,
never delete, because deleting a buffer on an idle cluster can leave Karpenter's nodes stuck.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from typing import Any

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import ConflictError, Kube
from forecaster.actuators.manifests import CapacityBuffer, PodTemplate, PodTemplateSpec
from forecaster.actuators.prewarm.placeholders import PlaceholderSpec, placeholder_pod_spec
from forecaster.errors import ActuationError

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

    def apply(
        self, spec: PlaceholderSpec, *, replicas: int, now: int, limit_gpus: int | None = None
    ) -> bool:
        """Make the buffer hold ``replicas`` chunks until ``now + ttl``; True if written.

        ``limit_gpus`` becomes the buffer's ``limits`` (in the pool's resource): the autoscaler
        itself then never holds more, whatever ``replicas`` says.
        """
        name = buffer_name(spec.pool)
        buffer = self.kube.get_capacity_buffer(self.namespace, name)
        expires = str(now + spec.ttl_seconds)
        limits = {spec.resource: str(limit_gpus)} if limit_gpus is not None else None
        if buffer is None:
            if replicas == 0:
                return False
            self._ensure_template(spec)
            body = self._buffer(spec, replicas, expires)
            if limits:
                body["spec"]["limits"] = limits
            self.kube.create_capacity_buffer(self.namespace, body)
            return True
        if buffer["metadata"].get("labels", {}).get(lbl.MANAGED_BY) != lbl.MANAGER:
            raise ActuationError(f"CapacityBuffer {self.namespace}/{name} exists but is not ours")
        if replicas > 0:
            self._ensure_template(spec)
        current = int(buffer["spec"].get("replicas", 0))
        left = _expires_at(buffer) - now
        same_limits = limits is None or buffer["spec"].get("limits") == limits
        same_chunk = (buffer["metadata"].get("annotations") or {}).get(lbl.GPUS) == str(spec.gpus)
        renewed = replicas == 0 or left >= spec.ttl_seconds // 2
        if current == replicas and same_limits and (same_chunk or replicas == 0) and renewed:
            return False
        annotations = {lbl.EXPIRES_AT: expires, **({lbl.GPUS: str(spec.gpus)} if replicas else {})}
        patch: dict[str, Any] = {  # a merge patch
            "metadata": {
                "resourceVersion": buffer["metadata"]["resourceVersion"],
                "annotations": annotations,
            },
            "spec": {"replicas": replicas, **({"limits": limits} if limits else {})},
        }
        self.kube.patch_capacity_buffer(self.namespace, name, patch)
        return True

    def describe(self, pool: str) -> str:
        """What the autoscaler reports on the pool's buffer, for the status page and logs."""
        buffer = self.kube.get_capacity_buffer(self.namespace, buffer_name(pool))
        if buffer is None:
            return "no buffer"
        status = buffer.get("status") or {}
        wanted = int(buffer["spec"].get("replicas", 0))
        parts = [f"{status.get('replicas', 'no')} of {wanted} chunk(s) reported by the autoscaler"]
        for condition in status.get("conditions") or []:
            reason = f" ({condition['reason']})" if condition.get("reason") else ""
            parts.append(f"{condition.get('type')}={condition.get('status')}{reason}")
        if len(parts) == 1:
            parts.append("no conditions yet")
        return "; ".join(parts)

    def remove(self, pool: str) -> bool | None:
        """Delete the pool's buffer and PodTemplate once drained; True if deleted, None if there
        is nothing to delete, False while it still holds capacity.

        Karpenter can leave nodes stuck when a buffer is deleted on an idle cluster, so only a
        buffer already at ``replicas: 0`` whose autoscaler reports no replicas (or nothing at
        all: no autoscaler acts on it) is deleted; zero it first (``apply(replicas=0)``).
        """
        name = buffer_name(pool)
        buffer = self.kube.get_capacity_buffer(self.namespace, name)
        if buffer is None:
            if self.kube.get_pod_template(self.namespace, name) is None:
                return None
            self.kube.delete_pod_template(self.namespace, name)
            return True
        if buffer["metadata"].get("labels", {}).get(lbl.MANAGED_BY) != lbl.MANAGER:
            return None
        reported = (buffer.get("status") or {}).get("replicas")
        if int(buffer["spec"].get("replicas", 0)) > 0 or int(reported or 0) > 0:
            return False
        self.kube.delete_capacity_buffer(self.namespace, name)
        self.kube.delete_pod_template(self.namespace, name)
        return True

    def expired(self, *, now: int) -> list[CapacityBuffer]:
        """Our buffers still holding replicas past their ``expires-at`` deadline."""
        return [
            b
            for b in self.kube.list_capacity_buffers(self.namespace, labels=lbl.owned_selector())
            if int(b["spec"].get("replicas", 0)) > 0 and _expires_at(b) <= now
        ]

    def zero(self, name: str) -> bool:
        """Set ``replicas: 0`` on our buffer ``name`` (never delete first: see the module
        docstring); True if a patch was sent, False if it was at 0 or is gone."""
        buffer = self.kube.get_capacity_buffer(self.namespace, name)
        if buffer is None or int(buffer["spec"].get("replicas", 0)) == 0:
            return False
        if buffer["metadata"].get("labels", {}).get(lbl.MANAGED_BY) != lbl.MANAGER:
            raise ActuationError(f"CapacityBuffer {self.namespace}/{name} exists but is not ours")
        patch = {
            "metadata": {"resourceVersion": buffer["metadata"]["resourceVersion"]},
            "spec": {"replicas": 0},
        }
        self.kube.patch_capacity_buffer(self.namespace, name, patch)
        return True

    def _ensure_template(self, spec: PlaceholderSpec) -> None:
        """Our PodTemplate of ``spec``'s shape: created, or replaced when the shape changed;
        someone else's of that name is refused (see the module docstring)."""
        name = buffer_name(spec.pool)
        desired = self._template(spec)
        current = self.kube.get_pod_template(self.namespace, name)
        if current is None:
            with contextlib.suppress(ConflictError):  # created meanwhile: checked next time
                self.kube.create_pod_template(self.namespace, desired)
            return
        meta = current.get("metadata") or {}
        if (meta.get("labels") or {}).get(lbl.MANAGED_BY) != lbl.MANAGER:
            raise ActuationError(
                f"PodTemplate {self.namespace}/{name} exists but is not ours (no label"
                f" {lbl.MANAGED_BY}={lbl.MANAGER}): refusing to prewarm with a shape someone else"
                " wrote; delete or rename it"
            )
        wanted = desired["metadata"]["annotations"][lbl.TEMPLATE_HASH]
        if (meta.get("annotations") or {}).get(lbl.TEMPLATE_HASH) != wanted:
            desired["metadata"]["resourceVersion"] = meta.get("resourceVersion", "")
            self.kube.replace_pod_template(self.namespace, desired)

    def _template(self, spec: PlaceholderSpec) -> PodTemplate:
        """Our PodTemplate of one chunk of ``spec``, with the digest of its pod template."""
        pod: PodTemplateSpec = {
            "metadata": {"labels": {lbl.MANAGED_BY: lbl.MANAGER, lbl.POOL: spec.pool}},
            "spec": placeholder_pod_spec(spec, priority_class=self.priority_class),
        }
        digest = hashlib.sha256(json.dumps(pod, sort_keys=True).encode()).hexdigest()[:16]
        return {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {
                "name": buffer_name(spec.pool),
                "namespace": self.namespace,
                "labels": {lbl.MANAGED_BY: lbl.MANAGER, lbl.POOL: spec.pool},
                "annotations": {lbl.FORMAT: str(lbl.OBJECT_FORMAT), lbl.TEMPLATE_HASH: digest},
            },
            "template": pod,
        }

    def _buffer(self, spec: PlaceholderSpec, replicas: int, expires: str) -> CapacityBuffer:
        return {
            "apiVersion": API_VERSION,
            "kind": "CapacityBuffer",
            "metadata": {
                "name": buffer_name(spec.pool),
                "namespace": self.namespace,
                "labels": {lbl.MANAGED_BY: lbl.MANAGER, lbl.POOL: spec.pool},
                "annotations": {
                    lbl.EXPIRES_AT: expires,
                    lbl.GPUS: str(spec.gpus),
                    lbl.FORMAT: str(lbl.OBJECT_FORMAT),
                },
            },
            "spec": {"podTemplateRef": {"name": buffer_name(spec.pool)}, "replicas": replicas},
        }


def _expires_at(buffer: CapacityBuffer) -> int:
    """The buffer's deadline; a buffer of ours without a readable one counts as expired."""
    try:
        return int((buffer["metadata"].get("annotations") or {})[lbl.EXPIRES_AT])
    except (KeyError, ValueError):
        return 0
