"""The Kubernetes JSON we build and read, typed (``TypedDict``, as kopf types its bodies).

Only the fields this package touches are declared; every one is optional (``total=False``)
because the API server omits empty fields and objects written by others may lack anything. Deep
structures we only pass through (a pod's affinity, a Job's podFailurePolicy, Karpenter's
disruption budgets) stay ``Any``. Kueue's objects are read generically (``actuators.kueue``).
These types never leave ``actuators/``: the observer turns them into ``core.cluster`` values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict


class OwnerReference(TypedDict, total=False):
    """Ties an object's life to its owner's (garbage collection)."""

    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    """``metadata`` of every object."""

    name: str
    namespace: str
    generateName: str
    uid: str
    labels: dict[str, str]
    annotations: dict[str, str]
    resourceVersion: str
    creationTimestamp: str
    deletionTimestamp: str
    ownerReferences: list[OwnerReference]


class Object(TypedDict, total=False):
    """Any object, as far as helpers that only read ``metadata`` care."""

    metadata: ObjectMeta


class Toleration(TypedDict, total=False):
    """A pod tolerating a taint."""

    key: str
    operator: str
    value: str
    effect: str


class Taint(TypedDict, total=False):
    """A node (or NodePool template) taint."""

    key: str
    value: str
    effect: str


class NodeSelectorRequirement(TypedDict, total=False):
    """One ``key operator values`` rule (node affinity, NodePool requirements)."""

    key: str
    operator: str
    values: list[str]


class ResourceRequirements(TypedDict, total=False):
    """Requests and limits by resource name (quantities as strings or numbers)."""

    requests: Mapping[str, str | int]
    limits: Mapping[str, str | int]


class Container(TypedDict, total=False):
    """A container of a pod."""

    name: str
    image: str
    command: list[str]
    resources: ResourceRequirements
    securityContext: dict[str, Any]
    volumeMounts: list[dict[str, Any]]
    restartPolicy: str
    """Of an init container: ``Always`` makes it a sidecar (it runs beside the containers)."""


class PodSpec(TypedDict, total=False):
    """What the observer reads from pods and placeholders are built with."""

    containers: list[Container]
    initContainers: list[Container]
    nodeName: str
    nodeSelector: dict[str, str]
    affinity: dict[str, Any]
    tolerations: list[Toleration]
    priorityClassName: str
    restartPolicy: str
    terminationGracePeriodSeconds: int
    schedulingGates: list[dict[str, str]]
    activeDeadlineSeconds: int
    automountServiceAccountToken: bool
    enableServiceLinks: bool
    securityContext: dict[str, Any]
    volumes: list[dict[str, Any]]
    imagePullSecrets: list[dict[str, str]]


class Condition(TypedDict, total=False):
    """A status condition (pods, Jobs, nodes, CapacityBuffers)."""

    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str


class PodStatus(TypedDict, total=False):
    """Phase and conditions (``PodScheduled``, ``DisruptionTarget``)."""

    phase: str
    conditions: list[Condition]


class Pod(TypedDict, total=False):
    """A pod: real demand, or one of our placeholders."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: PodSpec
    status: PodStatus


class PodTemplateSpec(TypedDict, total=False):
    """The pod part of a Job or PodTemplate."""

    metadata: ObjectMeta
    spec: PodSpec


class JobSpec(TypedDict, total=False):
    """A placeholder Job: deadlines that end it without us."""

    template: PodTemplateSpec
    activeDeadlineSeconds: int
    ttlSecondsAfterFinished: int
    backoffLimit: int
    completions: int
    parallelism: int
    podFailurePolicy: dict[str, Any]


class JobStatus(TypedDict, total=False):
    """Why a placeholder Job ended (``Failed`` with ``DeadlineExceeded`` / ``PodFailurePolicy``)."""

    conditions: list[Condition]
    active: int
    startTime: str


class Job(TypedDict, total=False):
    """A placeholder (``actuators.placeholders``)."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: JobSpec
    status: JobStatus


class PodTemplate(TypedDict, total=False):
    """The pod a CapacityBuffer stands in for."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    template: PodTemplateSpec


class NodeSpec(TypedDict, total=False):
    """Taints and cordoning."""

    taints: list[Taint]
    unschedulable: bool


class NodeStatus(TypedDict, total=False):
    """Allocatable GPUs and readiness."""

    allocatable: dict[str, str]
    capacity: dict[str, str]
    conditions: list[Condition]


class Node(TypedDict, total=False):
    """A node, attributed to its NodePool by label."""

    metadata: ObjectMeta
    spec: NodeSpec
    status: NodeStatus


class NodeClaimTemplateSpec(TypedDict, total=False):
    """Requirements and taints every node of the pool gets."""

    requirements: list[NodeSelectorRequirement]
    taints: list[Taint]


class NodeClaimTemplate(TypedDict, total=False):
    """A NodePool's ``spec.template``."""

    metadata: ObjectMeta
    spec: NodeClaimTemplateSpec


class Disruption(TypedDict, total=False):
    """A NodePool's consolidation settings (what protection patches and restores)."""

    consolidateAfter: str
    consolidationPolicy: str
    budgets: list[dict[str, Any]]


class NodePoolSpec(TypedDict, total=False):
    """The parts of a Karpenter NodePool we read or patch."""

    template: NodeClaimTemplate
    limits: Mapping[str, str | int]
    disruption: Disruption
    weight: int


class NodePool(TypedDict, total=False):
    """A Karpenter v1 NodePool."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: NodePoolSpec


class CapacityBufferSpec(TypedDict, total=False):
    """How many chunks of which pod the autoscaler keeps room for."""

    podTemplateRef: dict[str, str]
    replicas: int
    limits: Mapping[str, str | int]
    provisioningStrategy: str


class CapacityBufferStatus(TypedDict, total=False):
    """What the autoscaler made of the buffer."""

    replicas: int
    conditions: list[Condition]


class CapacityBuffer(TypedDict, total=False):
    """An ``autoscaling.x-k8s.io/v1beta1`` CapacityBuffer."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: CapacityBufferSpec
    status: CapacityBufferStatus


class ConfigMap(TypedDict, total=False):
    """State, kill switch and shared models."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    data: dict[str, str]


class LeaseSpec(TypedDict, total=False):
    """Leader election (times as RFC 3339 micro-time strings)."""

    holderIdentity: str | None
    leaseDurationSeconds: int
    acquireTime: str | None
    renewTime: str | None
    leaseTransitions: int


class Lease(TypedDict, total=False):
    """A ``coordination.k8s.io/v1`` Lease."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    spec: LeaseSpec


class ObjectReference(TypedDict, total=False):
    """What an Event is about."""

    apiVersion: str
    kind: str
    name: str
    namespace: str
    uid: str


class Event(TypedDict, total=False):
    """A core/v1 Event: ours (NodePool conflicts) or Karpenter's (launch failures)."""

    apiVersion: str
    kind: str
    metadata: ObjectMeta
    involvedObject: ObjectReference
    reason: str
    message: str
    type: str
    count: int
    firstTimestamp: str
    lastTimestamp: str
    source: dict[str, str]
    reportingComponent: str


class PriorityClass(TypedDict, total=False):
    """The placeholders' PriorityClass, verified before use."""

    metadata: ObjectMeta
    value: int
    preemptionPolicy: str


class PodDisruptionBudgetSpec(TypedDict, total=False):
    """Which pods a PDB protects."""

    selector: dict[str, Any]
    minAvailable: int | str
    maxUnavailable: int | str


class PodDisruptionBudget(TypedDict, total=False):
    """Read by the guardrails (GPU workloads without one)."""

    metadata: ObjectMeta
    spec: PodDisruptionBudgetSpec


def config_map(
    *, name: str, namespace: str, labels: dict[str, str], data: dict[str, str]
) -> ConfigMap:
    """One of our ConfigMaps (state, kill switch, shared models)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "data": data,
    }
