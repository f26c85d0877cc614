"""Reading GPU quantities and timestamps out of Kubernetes objects, and the error for an object
we cannot read.

A malformed object harms only the pool it belongs to (the observer isolates it), so reading it
raises ``MalformedObjectError`` rather than a bare ``ValueError``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any

from forecaster.accelerators import GPU, is_accelerator
from forecaster.actuators.manifests import Pod, PodTemplateSpec
from forecaster.errors import ActuationError

_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)([kKMG]?)$")


class MalformedObjectError(ActuationError):
    """An object of the cluster cannot be read as expected (it harms only its own pool)."""


def gpu_quantity(value: object) -> int:
    """A count of accelerators (GPUs, MIG slices, Neuron devices) from a Kubernetes quantity
    ('8', 8, '1k'); fractions round down."""
    match = _QUANTITY.match(str(value).strip())
    if not match:
        raise MalformedObjectError(f"unsupported accelerator quantity {value!r}")
    scale = {"": 1, "k": 1000, "K": 1000, "M": 10**6, "G": 10**9}[match.group(2)]
    return math.floor(float(match.group(1)) * scale)


def pod_gpus(pod: Pod | PodTemplateSpec, resource: str = GPU) -> int:
    """Units of ``resource`` (a pool's accelerator; GPUs by default) a pod (or a pod template)
    requests: requests, else limits, summed over containers."""
    total = 0
    for container in pod["spec"].get("containers", []):
        resources = container.get("resources") or {}
        value = (resources.get("requests") or {}).get(resource)
        if value is None:
            value = (resources.get("limits") or {}).get(resource, 0)
        total += gpu_quantity(value)
    return total


def accelerators(pod: Pod | PodTemplateSpec, also: Collection[str] = ()) -> dict[str, int]:
    """The accelerators a pod (or template) requests, units by resource: the known ones and
    ``also`` (the pools' configured resources) - what pool attribution and notice look at."""
    names: set[str] = set()
    for container in pod["spec"].get("containers", []):
        resources = container.get("resources") or {}
        for part in (resources.get("requests") or {}, resources.get("limits") or {}):
            names.update(name for name in part if is_accelerator(name) or name in also)
    units = {name: pod_gpus(pod, name) for name in sorted(names)}
    return {name: n for name, n in units.items() if n > 0}


def timestamp_seconds(text: object) -> float:
    """Epoch seconds of a Kubernetes timestamp (``2026-01-08T00:00:00Z``)."""
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


def kube_timestamp(seconds: float) -> str:
    """A Kubernetes timestamp (UTC, whole seconds) of epoch seconds: ``timestamp_seconds``'s
    inverse."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    """The object's ``status.conditions`` entry of type ``kind``, if any."""
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == kind:
            return dict(condition)
    return None


def condition_true(obj: Mapping[str, Any], kind: str) -> bool:
    """Whether the object's condition ``kind`` is ``True``."""
    condition = status_condition(obj, kind)
    return condition is not None and condition.get("status") == "True"
