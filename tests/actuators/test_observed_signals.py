"""What the observer reads for the plan beyond capacity and demand (API double).

Cases: pods created lately (the arrivals model's live counts) - real GPU pods of the pool in
every trailing window their age fits, pending or running; our placeholders, pods of other
pools and CPU pods are not counted. Empty Ready nodes (consolidation takes them) are reported
as empty, not spare - unless our NodePool pause keeps them.
"""

from __future__ import annotations

from forecaster.actuators import labels as lbl
from forecaster.actuators.kube import Kube
from forecaster.actuators.observe.observer import observe
from forecaster.testing.fakes import POOL, T0
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble


def test_the_pools_real_gpu_pods_are_counted_by_age(api: KubeApiDouble, kube: Kube) -> None:
    api.clock = float(T0)
    sim = ClusterSim(api)
    sim.add_nodepool(POOL, limit_gpus=64)
    sim.add_nodepool("other", limit_gpus=64)
    sim.submit("old", POOL, 8)  # created at T0
    api.clock += 20 * 60
    sim.step()  # old gets a node and runs
    sim.submit("ten-min", POOL, 4)
    api.clock += 10 * 60 - 30
    sim.submit("half-min", POOL, 2)
    sim.submit("elsewhere", "other", 8)
    sim.submit("cpu-only", POOL, 0)
    like = sim.submit("placeholder-like", POOL, 8)
    labels = {lbl.MANAGED_BY: lbl.MANAGER, lbl.ROLE: lbl.PLACEHOLDER}
    metadata = {"name": "placeholder", "namespace": "ml", "labels": labels}
    api.put("pods", {**like, "metadata": metadata, "status": {}})  # ours: not an arrival
    api.clock += 30
    snapshot = observe(kube, pools=[POOL], now=int(api.clock))[POOL]
    assert snapshot.arrivals is not None
    # 1 and 5 min: half-min + placeholder-like; 15 min: + ten-min; 60 min: + old (running)
    assert snapshot.arrivals.gpus == (10, 10, 14, 22)  # placeholder-like counts, ours not


def test_an_empty_ready_node_is_empty_not_spare(api: KubeApiDouble, kube: Kube) -> None:
    api.clock = float(T0)
    sim = ClusterSim(api)
    sim.busy_pool(POOL)
    sim.add_node(POOL)  # Ready, nothing on it
    snapshot = observe(kube, pools=[POOL], now=int(api.clock))[POOL]
    assert snapshot.empty_gpus == 8 and snapshot.spare_gpus == 0
