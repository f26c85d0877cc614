"""Start-up checks from hard-won experience, reported as warnings (log + status), never fatal.

* ``cluster-autoscaler``: a Cluster Autoscaler running beside Karpenter - both react to the same
  pending pods (placeholders included) and launch duplicate nodes.
* ``nodepool-missing`` / ``nodepool-unlimited``: a configured NodePool that does not exist, or has
  no limit on the pool's accelerator resource (runaway cost) - the planner refuses to prewarm
  it unless allowed.
* ``unprotected-gpu-workloads``: consolidation is on for a GPU pool while GPU workloads in it have
  neither a PodDisruptionBudget nor ``karpenter.sh/do-not-disrupt`` - Karpenter may move a
  training job to pack nodes tighter.
* ``lead-time``: the forecast horizon used for a pool is shorter than its image-pull time (the
  prewarm would arrive after the demand).
* ``lead-longer-than-configured``: the pool's launches of the last day took longer than its
  configured ``lead_time`` (``actuators.lead``): prewarm aims too short and arrives late.
* ``image-pull-dominates``: most of the measured lead is pods pulling their image on fresh
  nodes - no forecast removes that; node images with the containers cached, a lazy-pulling
  snapshotter or ``warm_image`` (placeholders pre-pull the workload image) shorten it.
* ``nodepool-unreadable``: a configured NodePool the daemon may not read (a 403: the NodePool
  grant does not name it) - that pool's checks are skipped, the others run.
* ``guardrails-unavailable``: the API server failed while checking (the daemon still starts).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from forecaster.accelerators import GPU
from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube
from forecaster.actuators.manifests import Node, Pod, PodDisruptionBudget
from forecaster.actuators.observe.lead import measure_lead
from forecaster.actuators.observe.pod_watch import LIVE_PODS
from forecaster.actuators.quantities import pod_gpus
from forecaster.errors import ActuationError

CLUSTER_AUTOSCALER_SELECTORS = (
    "app=cluster-autoscaler",
    "app.kubernetes.io/name=cluster-autoscaler",
)
DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"


@dataclass(frozen=True)
class Guardrail:
    """One finding: a stable code, the pool it concerns (if any) and what to do."""

    code: str
    pool: str | None
    message: str


@dataclass(frozen=True)
class PoolCheck:
    """What the checks need to know about a configured pool."""

    pool: str
    allow_unlimited: bool
    horizon_seconds: int
    image_pull_seconds: int
    lead_seconds: int = 0
    """The configured lead (provisioning + image pull + margin); 0: not compared."""
    resource: str = GPU
    """The pool's accelerator resource (its limit, its pods)."""


def check(kube: Kube, pools: Sequence[PoolCheck], *, now: int) -> list[Guardrail]:
    """Run every check at ``now`` (epoch seconds); see the module docstring. An API error is
    itself a finding."""
    try:
        return _check(kube, pools, now=now)
    except ActuationError as exc:  # never fatal: a start-up during an API blip still starts
        return [Guardrail("guardrails-unavailable", None, f"could not run the checks: {exc}")]


def _lead(pool: PoolCheck, nodes: list[Node], pods: list[Pod], *, now: int) -> list[Guardrail]:
    """The measured lead against the configured one, and what dominates it."""
    measured = measure_lead(nodes, pods, now=now)
    if measured is None or not pool.lead_seconds:
        return []
    findings = []
    total = measured.total_seconds
    figures = (
        f"launches of the last day took {total:.0f} s (median of {measured.launches}: node"
        f" Ready after {measured.provisioning_seconds:.0f} s"
        + (
            f", pods started {measured.startup_seconds:.0f} s later"
            if measured.startup_seconds
            else ""
        )
        + ")"
    )
    if total > 1.2 * pool.lead_seconds:
        findings.append(
            Guardrail(
                "lead-longer-than-configured",
                pool.pool,
                f"{figures}, more than the configured lead_time of {pool.lead_seconds} s:"
                " prewarm aims too short; raise lead_time to the measured figure",
            )
        )
    if measured.startup_seconds is not None and measured.startup_seconds > total / 2:
        findings.append(
            Guardrail(
                "image-pull-dominates",
                pool.pool,
                f"{figures}: pulling images on fresh nodes is most of it; node images with the"
                " containers cached, a lazy-pulling snapshotter, or warm_image (placeholders"
                " pre-pull the workload image) shorten it more than any forecast",
            )
        )
    return findings


def _check(kube: Kube, pools: Sequence[PoolCheck], *, now: int) -> list[Guardrail]:
    findings = _cluster_autoscaler(kube)
    pods = kube.list_pods(fields=LIVE_PODS)
    pdbs = kube.list_pdbs()
    for pool in pools:
        if pool.horizon_seconds < pool.image_pull_seconds:
            findings.append(
                Guardrail(
                    "lead-time",
                    pool.pool,
                    f"forecast horizon {pool.horizon_seconds}s is shorter than the image pull"
                    f" ({pool.image_pull_seconds}s): prewarm would arrive after the demand",
                )
            )
        try:
            nodepool = kube.get_nodepool(pool.pool)
        except ActuationError as exc:  # this pool's NodePool only (a 403: not in our grant)
            findings.append(Guardrail("nodepool-unreadable", pool.pool, str(exc)))
            continue
        if nodepool is None:
            findings.append(
                Guardrail("nodepool-missing", pool.pool, f"NodePool {pool.pool} does not exist")
            )
            continue
        if pool.resource not in (nodepool["spec"].get("limits") or {}):
            action = (
                "acting anyway (allow_unlimited_nodepool)"
                if pool.allow_unlimited
                else "will not prewarm it"
            )
            findings.append(
                Guardrail(
                    "nodepool-unlimited",
                    pool.pool,
                    f"NodePool {pool.pool} has no {pool.resource} limit (runaway cost risk):"
                    f" {action}",
                )
            )
        pool_nodes = kube.list_nodes(labels=f"{lbl.NODEPOOL_LABEL}={pool.pool}")
        nodes = {n["metadata"]["name"] for n in pool_nodes}
        on_pool = [p for p in pods if p["spec"].get("nodeName") in nodes]
        findings += _lead(pool, pool_nodes, on_pool, now=now)
        if nodepool["spec"].get("disruption", {}).get("consolidateAfter") != "Never":
            exposed = _unprotected_gpu_pods(pods, pdbs, pool, nodes)
            if exposed:
                per_namespace = ", ".join(
                    f"{ns} ({exposed.count(ns)})" for ns in sorted(set(exposed))
                )  # namespaces only: the endpoint never lists other teams' pod names
                findings.append(
                    Guardrail(
                        "unprotected-gpu-workloads",
                        pool.pool,
                        f"consolidation is on for {pool.pool} and {len(exposed)} GPU pod(s) have no"
                        f" PodDisruptionBudget or {DO_NOT_DISRUPT} annotation, in namespaces"
                        f" {per_namespace}",
                    )
                )
    return findings


def _cluster_autoscaler(kube: Kube) -> list[Guardrail]:
    found = []
    for selector in CLUSTER_AUTOSCALER_SELECTORS:
        found += [str(p["metadata"]["namespace"]) for p in kube.list_pods(labels=selector)]
    if not found:
        return []
    return [
        Guardrail(
            "cluster-autoscaler",
            None,
            f"Cluster Autoscaler is running beside Karpenter (namespace"
            f" {', '.join(sorted(set(found)))}):"
            " both scale for the same pending pods and can launch duplicate GPU nodes",
        )
    ]


def _unprotected_gpu_pods(
    pods: list[Pod], pdbs: list[PodDisruptionBudget], check: PoolCheck, nodes: set[str]
) -> list[str]:
    """The namespace of every accelerator pod of the pool that consolidation could move."""
    pool = check.pool
    exposed = []
    for pod in pods:
        meta = pod["metadata"]
        pod_labels = meta.get("labels") or {}
        if pod_labels.get(lbl.MANAGED_BY) == lbl.MANAGER or pod_gpus(pod, check.resource) == 0:
            continue
        selected = (pod["spec"].get("nodeSelector") or {}).get(lbl.NODEPOOL_LABEL) == pool
        if not selected and pod["spec"].get("nodeName") not in nodes:
            continue
        if (meta.get("annotations") or {}).get(DO_NOT_DISRUPT) == "true":
            continue
        if any(_selects(pdb, pod) for pdb in pdbs):
            continue
        exposed.append(str(meta["namespace"]))
    return exposed


def _selects(pdb: PodDisruptionBudget, pod: Pod) -> bool:
    if pdb["metadata"].get("namespace") != pod["metadata"].get("namespace"):
        return False
    wanted = (pdb["spec"].get("selector") or {}).get("matchLabels") or {}
    have = pod["metadata"].get("labels") or {}
    return bool(wanted) and all(have.get(k) == v for k, v in wanted.items())
