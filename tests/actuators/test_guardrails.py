"""Start-up guardrails against the API double: each finding appears exactly when it should.

Cases: a clean cluster gives nothing; Cluster Autoscaler pods; a missing NodePool; a NodePool
without a GPU limit (with and without the explicit allowance); GPU workloads exposed to
consolidation, silenced by a PDB or by karpenter.sh/do-not-disrupt or by consolidateAfter Never;
a horizon shorter than the image pull.
"""

from __future__ import annotations

from forecaster.actuators.guardrails import PoolCheck, check
from forecaster.actuators.kube import Kube
from forecaster.testing.fakes import T0
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble

OK = PoolCheck(pool="gpu-a", allow_unlimited=False, horizon_seconds=900, image_pull_seconds=300)


def codes(kube: Kube, *pools: PoolCheck) -> list[tuple[str, str | None]]:
    return [(g.code, g.pool) for g in check(kube, list(pools or [OK]), now=T0)]


def protect_workloads(api: KubeApiDouble) -> None:
    api.put(
        "poddisruptionbudgets",
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "train", "namespace": "ml"},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "train"}}},
        },
    )


def test_clean_cluster(api: KubeApiDouble, sim: ClusterSim, kube: Kube) -> None:
    sim.add_nodepool("gpu-a", limit_gpus=64)
    sim.submit("job", "gpu-a", 8)
    protect_workloads(api)
    assert codes(kube) == []


def test_cluster_autoscaler_beside_karpenter(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    sim.add_nodepool("gpu-a", limit_gpus=64)
    api.put(
        "pods",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "ca",
                "namespace": "kube-system",
                "labels": {"app": "cluster-autoscaler"},
            },
            "spec": {
                "containers": [
                    {
                        "name": "ca",
                        "image": "registry.k8s.io/autoscaling/cluster-autoscaler:v1.33.0",
                    }
                ]
            },
        },
    )
    findings = check(kube, [OK], now=T0)
    assert [(g.code, g.pool) for g in findings] == [("cluster-autoscaler", None)]
    assert "(namespace kube-system)" in findings[0].message


def test_missing_and_unlimited_nodepools(api: KubeApiDouble, sim: ClusterSim, kube: Kube) -> None:
    sim.add_nodepool("gpu-a", limit_gpus=None, consolidate_after="Never")
    missing = PoolCheck(
        pool="gpu-b", allow_unlimited=False, horizon_seconds=900, image_pull_seconds=300
    )
    findings = check(kube, [OK, missing], now=T0)
    assert [(g.code, g.pool) for g in findings] == [
        ("nodepool-unlimited", "gpu-a"),
        ("nodepool-missing", "gpu-b"),
    ]
    assert "will not prewarm it" in findings[0].message
    allowed = PoolCheck(
        pool="gpu-a", allow_unlimited=True, horizon_seconds=900, image_pull_seconds=300
    )
    assert "acting anyway" in check(kube, [allowed], now=T0)[0].message


def test_gpu_workloads_exposed_to_consolidation(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    sim.add_nodepool("gpu-a", limit_gpus=64)
    sim.submit("job", "gpu-a", 8)
    assert codes(kube) == [("unprotected-gpu-workloads", "gpu-a")]
    (finding,) = check(kube, [OK], now=T0)
    assert "in namespaces ml (1)" in finding.message
    assert "job" not in finding.message.replace("jobs", "")  # no other team's pod name
    pod = api.objects("pods", "ml")[0]
    pod["metadata"]["annotations"] = {"karpenter.sh/do-not-disrupt": "true"}
    api.store.replace(("pods", "ml", "job"), pod)
    assert codes(kube) == []


def test_consolidation_off_needs_no_protection(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    sim.add_nodepool("gpu-a", limit_gpus=64, consolidate_after="Never")
    sim.submit("job", "gpu-a", 8)
    assert codes(kube) == []


def test_horizon_shorter_than_image_pull(api: KubeApiDouble, sim: ClusterSim, kube: Kube) -> None:
    sim.add_nodepool("gpu-a", limit_gpus=64)
    short = PoolCheck(
        pool="gpu-a", allow_unlimited=False, horizon_seconds=300, image_pull_seconds=600
    )
    assert codes(kube, short) == [("lead-time", "gpu-a")]


def test_an_api_error_is_a_finding_not_a_crash(api: KubeApiDouble, kube: Kube) -> None:
    api.faults.add("GET", r"/pods$", status=500, times=10)
    (finding,) = check(kube, [OK], now=T0)
    assert finding.code == "guardrails-unavailable" and "HTTP 500" in finding.message
