"""Pool attribution the way Karpenter picks a NodePool, and pools the cloud cannot serve.

Cases on the API double, through ``observe``: pending GPU pods reach a pool by required node
affinity on ``karpenter.sh/nodepool`` or on a label of the pool's node template, and count as
its demand; a pod two NodePools could serve goes to the heavier one; pods no NodePool can serve
(an untolerated GPU taint, a label no pool sets) are reported per namespace and counted nowhere.
Karpenter's ``InsufficientCapacityError`` Warnings on the pool's NodeClaims reach the snapshot,
the plan's reasons (no new prewarm while launches fail), the status page and a metric; only
placeholders on Ready nodes count as warm.
"""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from forecaster.actuators.attribution import compatible, nodepool_of, shape
from forecaster.actuators.kube import Kube
from forecaster.actuators.observe.observer import observe
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.testing.fakes import POOL, T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import GPU_TAINT, ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import placeholders, reconciler

NODEPOOL = "karpenter.sh/nodepool"


def _in(key: str, *values: str) -> dict[str, object]:
    return {"key": key, "operator": "In", "values": list(values)}


def test_affinity_attributed_demand_is_counted(sim: ClusterSim, kube: Kube) -> None:
    sim.add_nodepool("gpu-a", limit_gpus=64, labels={"gpu-type": "a100"})
    sim.add_nodepool("gpu-b", limit_gpus=64, labels={"gpu-type": "h100"})
    sim.submit("by-name", "gpu-a", 8, node_selector={}, affinity_terms=[[_in(NODEPOOL, "gpu-a")]])
    sim.submit("by-label", "gpu-a", 4, node_selector={}, affinity_terms=[[_in("gpu-type", "h100")]])
    sim.submit("either", "gpu-a", 2, node_selector={"gpu-type": "a100"})
    seen = observe(kube, pools=["gpu-a", "gpu-b"], now=0)
    assert seen["gpu-a"].pending_gpus == 8 + 2
    assert seen["gpu-b"].pending_gpus == 4
    assert seen.unattributed == ()


def test_a_pod_two_nodepools_serve_goes_to_the_heavier_one(sim: ClusterSim, kube: Kube) -> None:
    sim.add_nodepool("gpu-spot", limit_gpus=64, weight=50, labels={"gpu": "yes"})
    sim.add_nodepool("gpu-od", limit_gpus=64, labels={"gpu": "yes"})
    sim.submit("anywhere", "x", 8, node_selector={"gpu": "yes"})
    seen = observe(kube, pools=["gpu-spot", "gpu-od"], now=0)
    assert (seen["gpu-spot"].pending_gpus, seen["gpu-od"].pending_gpus) == (8, 0)


def test_pods_no_nodepool_serves_are_reported_per_namespace(sim: ClusterSim, kube: Kube) -> None:
    sim.add_nodepool("gpu-a", limit_gpus=64)
    sim.submit("untolerated", "gpu-a", 8, node_selector={}, tolerate_gpu=False, namespace="vision")
    sim.submit("nowhere", "gpu-a", 4, node_selector={"team-pool": "llm"}, namespace="vision")
    sim.submit("other", "gpu-a", 1, node_selector={}, affinity_terms=[[_in(NODEPOOL, "gone")]])
    seen = observe(kube, pools=["gpu-a"], now=0)
    assert seen["gpu-a"].pending_gpus == 0
    lost = {u.namespace: (u.pods, u.gpus) for u in seen.unattributed}
    assert lost == {"vision": (2, 12), "ml": (1, 1)}


def test_compatibility_follows_karpenter_requirements() -> None:
    pool = shape(
        {
            "metadata": {"name": "gpu-a"},
            "spec": {
                "template": {
                    "metadata": {"labels": {"gpu-type": "a100"}},
                    "spec": {
                        "requirements": [
                            {
                                "key": "karpenter.sh/capacity-type",
                                "operator": "In",
                                "values": ["spot"],
                            },
                            {
                                "key": "topology.kubernetes.io/zone",
                                "operator": "NotIn",
                                "values": ["us-east-1c"],
                            },
                        ],
                        "taints": [GPU_TAINT],
                    },
                }
            },
        }
    )

    def pod(*terms: list[dict[str, object]], tolerate: bool = True) -> dict[str, object]:
        spec: dict[str, object] = {"containers": []}
        if tolerate:
            spec["tolerations"] = [{"key": "nvidia.com/gpu", "operator": "Exists"}]
        if terms:
            spec["affinity"] = {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": t} for t in terms]
                    }
                }
            }
        return {"metadata": {"name": "p"}, "spec": spec}

    zone = "topology.kubernetes.io/zone"
    assert compatible(pod(), pool)
    assert not compatible(pod(tolerate=False), pool)
    assert compatible(pod([_in("karpenter.sh/capacity-type", "spot", "on-demand")]), pool)
    assert not compatible(pod([_in("karpenter.sh/capacity-type", "on-demand")]), pool)
    assert compatible(pod([_in(zone, "us-east-1a")]), pool)  # well-known: the cloud sets it
    assert not compatible(pod([_in(zone, "us-east-1c")]), pool)
    assert not compatible(pod([_in("team", "x")]), pool)  # a label this pool never sets
    assert compatible(pod([{"key": "team", "operator": "DoesNotExist"}]), pool)
    assert not compatible(pod([{"key": "gpu-type", "operator": "DoesNotExist"}]), pool)
    assert compatible(pod([_in("team", "x")], [_in("gpu-type", "a100")]), pool)  # terms OR
    assert nodepool_of(pod([_in("gpu-type", "h100")]), [pool]) is None


def test_no_capacity_at_the_cloud_is_surfaced_and_stops_new_prewarm(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    api.clock = float(T0)
    sim = ClusterSim(api)
    sim.busy_pool(POOL)
    loop = reconciler(tmp_path, api, LiveSource(T0 - 2 * 86400, calm_history()))
    daemon = Daemon(reconciler=loop, pools=(POOL,))
    first = daemon.reconcile(T0)
    assert first is not None and first.plan.pool(POOL).target_gpus >= 8
    created = len(placeholders(api))
    sim.no_capacity.add(POOL)
    sim.step()  # Karpenter tries to launch a node for the placeholders and fails
    api.clock = T0 + 30
    record = daemon.reconcile(T0 + 30)
    assert record is not None
    snapshot = record.pools[POOL].snapshot
    assert snapshot is not None and snapshot.launch_problem is not None
    assert "InsufficientCapacityError" in snapshot.launch_problem
    assert snapshot.ready_placeholder_gpus == 0  # pending placeholders are not warm
    pool_plan = record.plan.pool(POOL)
    assert any("no capacity at the cloud" in r for r in pool_plan.reasons)
    assert pool_plan.target_gpus <= snapshot.prewarm_gpus
    assert len(placeholders(api)) == created
    client = TestClient(create_app(daemon))
    status = client.get("/api/v1/status").json()["pools"][POOL]
    assert "insufficient capacity" in status["launch_problem"]
    assert status["prewarm_ready_gpus"] == 0
    assert f'forecaster_launch_failing{{pool="{POOL}"}} 1.0' in client.get("/metrics").text
    api.clock = T0 + 30 + 601  # the Warning ages out of the window: launches may work again
    later = daemon.reconcile(T0 + 631)
    assert later is not None and later.pools[POOL].snapshot.launch_problem is None  # type: ignore[union-attr]
