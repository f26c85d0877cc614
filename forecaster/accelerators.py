"""The extended resources a NodePool's accelerators are scheduled by, and what each one's unit is.

A pool counts demand, prewarm, caps, prices and the ledger in one unit: the extended resource
its pods request (``PoolSettings.resource``, default ``nvidia.com/gpu``). Every count named
``gpus`` in the code is in that unit - for a MIG pool a slice, for a Neuron pool a device or a
core. Kinds of resource are told apart by name only; nothing here reads the cluster.

kube-state-metrics names a resource in its ``resource`` label with every character that is not
a letter, digit or ``_`` replaced by ``_`` (``nvidia.com/mig-1g.10gb`` is
``nvidia_com_mig_1g_10gb``): ``metric_label`` is that rule.
"""

from __future__ import annotations

import re

GPU = "nvidia.com/gpu"
"""The default: whole NVIDIA GPUs (the device plugin's resource)."""

MIG_PREFIX = "nvidia.com/mig-"
"""NVIDIA MIG slices, one resource per profile (``nvidia.com/mig-1g.10gb``): the mixed
strategy of the device plugin. The single strategy exposes slices as ``nvidia.com/gpu``."""

NAMED = {
    GPU: "NVIDIA GPU",
    "amd.com/gpu": "AMD GPU",
    "aws.amazon.com/neuron": "AWS Neuron device (Trainium/Inferentia)",
    "aws.amazon.com/neurondevice": "AWS Neuron device (Trainium/Inferentia)",
    "aws.amazon.com/neuroncore": "AWS NeuronCore",
    "gpu.intel.com/i915": "Intel GPU",
    "gpu.intel.com/xe": "Intel GPU",
}
"""Accelerator resources by the name their device plugins advertise, with their unit."""

TAINT_KEYS = {MIG_PREFIX: GPU}
"""The taint key nodes of a resource usually carry where it is not the resource's own name
(MIG nodes are tainted ``nvidia.com/gpu`` like whole-GPU ones)."""

_RESOURCE_NAME = re.compile(
    r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


def is_accelerator(resource: str) -> bool:
    """Whether ``resource`` is one of the accelerators forecaster knows (``NAMED``, MIG)."""
    return resource in NAMED or resource.startswith(MIG_PREFIX)


def check_resource(resource: str) -> str:
    """``resource`` if it names an extended resource (``domain/name``); ValueError saying why
    not. An unknown accelerator is accepted (a device plugin we have not heard of)."""
    if not _RESOURCE_NAME.match(resource):
        raise ValueError(f"{resource!r} is not an extended resource name (domain/name, like {GPU})")
    if resource.startswith("kubernetes.io/"):  # Kubernetes' own domain: never a device's
        raise ValueError(f"{resource!r} is not an accelerator resource")
    return resource


def unit_of(resource: str) -> str:
    """What one unit of ``resource`` is, for people: 'NVIDIA GPU', 'MIG slice 1g.10gb'."""
    if resource.startswith(MIG_PREFIX):
        return f"MIG slice {resource.removeprefix(MIG_PREFIX)} (not a whole GPU)"
    return NAMED.get(resource, f"unit of {resource}")


def metric_label(resource: str) -> str:
    """kube-state-metrics' ``resource`` label value of ``resource``."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)


def taint_key(resource: str) -> str:
    """The taint key a placeholder of ``resource`` tolerates."""
    for prefix, key in TAINT_KEYS.items():
        if resource.startswith(prefix):
            return key
    return resource
