"""Which NodePool a pending pod will land on, the way Karpenter chooses it.

A pending pod asks for nodes through its ``nodeSelector`` and its *required* node affinity (the
``nodeSelectorTerms`` are alternatives; each one is ANDed with the ``nodeSelector``). A NodePool
offers nodes with its template labels, its ``requirements`` and ``karpenter.sh/nodepool=<name>``;
its template taints must be tolerated (startup taints need not). Karpenter provisions from the
compatible NodePool with the highest ``spec.weight`` (ties by name); we attribute the pod there.

Compatibility per requirement key (Karpenter's rule, simplified to what GPU pools use):
``In`` needs a common value with what the NodePool allows; a key the NodePool does not constrain
is satisfiable only for well-known labels the cloud fills in (zone, instance type, arch,
capacity type, ...) - a custom label the NodePool never sets cannot appear on its nodes.
``NotIn``/``DoesNotExist`` fail only when the NodePool pins exactly the excluded values /
sets the key; ``Exists`` needs the key set or well-known; ``Gt``/``Lt`` are taken as
satisfiable. Preferred affinity is ignored (Karpenter relaxes it when it must).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from forecaster.actuators import labels as lbl
from forecaster.actuators.manifests import NodePool, Pod, Taint

WELL_KNOWN = frozenset(
    {
        "topology.kubernetes.io/zone",
        "topology.kubernetes.io/region",
        "node.kubernetes.io/instance-type",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "kubernetes.io/hostname",
        "karpenter.sh/capacity-type",
        "node.kubernetes.io/windows-build",
    }
)
WELL_KNOWN_PREFIXES = ("karpenter.k8s.aws/", "karpenter.azure.com/", "karpenter.gcp/")


@dataclass(frozen=True)
class Requirement:
    """One ``key operator values`` term."""

    key: str
    operator: str
    values: frozenset[str]


@dataclass(frozen=True)
class NodePoolShape:
    """What a NodePool's nodes can carry, for matching pods against it."""

    name: str
    weight: int
    allowed: dict[str, Requirement]
    """Per label key, the NodePool's own requirement (labels become ``In [value]``)."""
    taints: tuple[Taint, ...]


def shape(nodepool: NodePool) -> NodePoolShape:
    """A NodePool object's shape; malformed fields raise (the observer isolates them)."""
    name = str(nodepool["metadata"]["name"])
    template = nodepool["spec"].get("template") or {}
    allowed: dict[str, Requirement] = {}
    for req in (template.get("spec") or {}).get("requirements") or []:
        values = frozenset(str(v) for v in req.get("values") or [])
        allowed[req["key"]] = Requirement(req["key"], req["operator"], values)
    for key, value in ((template.get("metadata") or {}).get("labels") or {}).items():
        allowed[key] = Requirement(key, "In", frozenset({str(value)}))
    allowed[lbl.NODEPOOL_LABEL] = Requirement(lbl.NODEPOOL_LABEL, "In", frozenset({name}))
    taints = tuple((template.get("spec") or {}).get("taints") or [])
    return NodePoolShape(name, int(nodepool["spec"].get("weight") or 0), allowed, taints)


def pod_terms(pod: Pod) -> list[list[Requirement]]:
    """The pod's alternatives: each is the ``nodeSelector`` ANDed with one required term."""
    spec = pod["spec"]
    selector = spec.get("nodeSelector") or {}
    base = [Requirement(k, "In", frozenset({str(v)})) for k, v in selector.items()]
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return [base]
    return [
        base
        + [
            Requirement(e["key"], e["operator"], frozenset(str(v) for v in e.get("values") or []))
            for e in term.get("matchExpressions") or []
        ]
        for term in terms
    ]


def _well_known(key: str) -> bool:
    return key in WELL_KNOWN or key.startswith(WELL_KNOWN_PREFIXES)


def _satisfiable(want: Requirement, pool: NodePoolShape) -> bool:
    have = pool.allowed.get(want.key)
    if have is None:  # In / Exists on a label the pool never sets: only if the cloud sets it
        return want.operator not in ("In", "Exists") or _well_known(want.key)
    rule = _RULES.get(want.operator)
    return True if rule is None else rule(want, have)  # Gt / Lt: taken as satisfiable


def _in(want: Requirement, have: Requirement) -> bool:
    if have.operator == "In":
        return bool(want.values & have.values)
    if have.operator == "NotIn":
        return bool(want.values - have.values)
    return have.operator in ("Exists", "Gt", "Lt")


_RULES: dict[str, Callable[[Requirement, Requirement], bool]] = {
    "In": _in,
    "NotIn": lambda want, have: not (have.operator == "In" and have.values <= want.values),
    "Exists": lambda want, have: have.operator != "DoesNotExist",
    "DoesNotExist": lambda want, have: have.operator in ("DoesNotExist", "NotIn"),
}


def _tolerates(pod: Pod, taint: Taint) -> bool:
    if taint.get("effect") == "PreferNoSchedule":
        return True
    for tol in pod["spec"].get("tolerations") or []:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists" and (not tol.get("key") or tol["key"] == taint["key"]):
            return True
        if tol.get("key") == taint["key"] and tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def compatible(pod: Pod, pool: NodePoolShape) -> bool:
    """Could Karpenter place ``pod`` on a node of ``pool``?"""
    if not all(_tolerates(pod, t) for t in pool.taints):
        return False
    return any(all(_satisfiable(r, pool) for r in term) for term in pod_terms(pod))


def nodepool_of(pod: Pod, pools: Sequence[NodePoolShape]) -> str | None:
    """The NodePool Karpenter would provision ``pod`` from: the heaviest compatible one."""
    fits = [p for p in pools if compatible(pod, p)]
    if not fits:
        return None
    return min(fits, key=lambda p: (-p.weight, p.name)).name
