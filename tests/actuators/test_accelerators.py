"""Pools of other accelerators than whole NVIDIA GPUs: MIG slices, AMD GPUs, AWS Neuron devices.

On the API double, the daemon wired from one config with three pools, each of its own resource:
each pool's demand is its own pods' units of its resource (a pod of another accelerator on its
nodes is not its demand), its placeholders request its resource and tolerate its taint (so
Karpenter's double schedules them onto its nodes), its caps hold in its unit (the NodePool's
limit on its resource, the pool's ``max_prewarm_gpus``), the status says what its unit is, and
its NodePool's limit on its resource is what the guardrail looks for, and a CronJob announces
its runs in its pool's unit. A config giving a pool two
resources is refused with the reason. (The closed loop through kube-state-metrics and
Prometheus runs for a MIG pool in ``tests/service/test_closed_loop.py``.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError

from forecaster.accelerators import metric_label, unit_of
from forecaster.actuators import guardrails
from forecaster.actuators.guardrails import PoolCheck
from forecaster.app import doctor
from forecaster.service.daemon import Daemon
from forecaster.service.http import create_app
from forecaster.settings import Settings
from forecaster.testing.fakes import T0, LiveSource, calm_history
from forecaster.testing.kubeapi.cluster import ClusterSim, pod_gpus
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import cronjob
from tests.factories import client, placeholders, reconciler

POOLS = {
    "mig": "nvidia.com/mig-1g.10gb",
    "amd": "amd.com/gpu",
    "neuron": "aws.amazon.com/neuron",
}
LIMIT = 24
"""Each NodePool's limit on its resource: three 8-unit nodes."""


def pools_config() -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "resource": resource,
            "gpus_per_node": 8,
            "max_prewarm_gpus": 32,  # above what the NodePool's limit leaves
            "floor_gpus": 16,
        }
        for name, resource in POOLS.items()
    ]


def cluster(api: KubeApiDouble) -> ClusterSim:
    """Per pool: two Ready 8-unit nodes running one 8-unit and one 4-unit pod of its resource;
    and a pod selecting the AMD pool that asks for NVIDIA GPUs (not the pool's unit)."""
    api.clock = float(T0)
    sim = ClusterSim(api)
    for name, resource in POOLS.items():
        sim.add_nodepool(name, limit_gpus=LIMIT, resource=resource)
        for _ in range(2):
            sim.add_node(name)
        sim.submit(f"{name}-big", name, 8)
        sim.submit(f"{name}-small", name, 4)
    sim.submit("stray", "amd", 2, resource="nvidia.com/gpu")  # pending: not an AMD GPU pod
    nightly = cronjob(pool="neuron")  # 2 pods, each asking for 4 Neuron devices
    template = nightly["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    template["tolerations"] = [{"key": POOLS["neuron"], "operator": "Exists"}]
    template["containers"][0]["resources"] = {"requests": {POOLS["neuron"]: "4"}}
    api.put("cronjobs", nightly)
    sim.step()
    return sim


def test_each_pool_counts_plans_and_prewarms_in_its_own_resource(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    sim = cluster(api)
    source = LiveSource(T0 - 2 * 86400, calm_history(level=12.0))
    loop = reconciler(tmp_path, api, source, pools=pools_config())
    daemon = Daemon(reconciler=loop, pools=tuple(POOLS))
    record = daemon.reconcile(T0)
    assert record is not None and not record.errors
    for name in POOLS:
        snapshot = record.pools[name].snapshot
        assert snapshot is not None
        assert (snapshot.running_gpus, snapshot.allocatable_gpus) == (12, 16), name
        assert snapshot.pending_gpus == 0, name  # the stray NVIDIA pod is no AMD demand
        assert snapshot.nodepool_limit_gpus == LIMIT, name
        announced = [(i.source, i.gpus_per_pod, i.pods) for i in snapshot.announced]
        assert announced == ([("cronjob", 4, 2)] if name == "neuron" else []), name
        # the NodePool's limit in the pool's unit caps the prewarm: 24 - 16 of nodes = 8
        assert record.plan.pool(name).target_gpus <= LIMIT - 16 + 4, name
    sim.step()  # Karpenter launches nodes for the placeholders
    api.clock = T0 + 120
    for _ in range(2):
        sim.step()  # the nodes are Ready: the placeholders land on their pool's nodes
    record = daemon.reconcile(T0 + 120)
    assert record is not None and not record.errors
    jobs = placeholders(api)
    assert {j["metadata"]["labels"]["forecaster.io/pool"] for j in jobs} == set(POOLS)
    for job in jobs:
        pool = job["metadata"]["labels"]["forecaster.io/pool"]
        container = job["spec"]["template"]["spec"]["containers"][0]
        requested = {k for k in container["resources"]["requests"] if "/" in k}
        assert requested == {POOLS[pool]}, pool
        tolerated = {t["key"] for t in job["spec"]["template"]["spec"]["tolerations"]}
        assert tolerated == {"nvidia.com/gpu" if pool == "mig" else POOLS[pool]}, pool
    for name, resource in POOLS.items():
        ours = [
            p
            for p in api.objects("pods", "forecaster-placeholders")
            if p["spec"].get("nodeSelector", {}).get("karpenter.sh/nodepool") == name
        ]
        assert ours and all(p["spec"].get("nodeName", "").startswith(name) for p in ours), name
        held = sum(pod_gpus(p, resource) for p in ours)
        nodes = [n for n in api.objects("nodes") if n["metadata"]["name"].startswith(name)]
        assert held + 12 <= LIMIT and len(nodes) * 8 <= LIMIT, name  # the limit held
        snapshot = record.pools[name].snapshot
        assert snapshot is not None and snapshot.running_gpus == 12, name  # not ours, not stray
    status = TestClient(create_app(daemon)).get("/api/v1/status").json()["pools"]
    assert status["mig"]["resource"] == "nvidia.com/mig-1g.10gb"
    assert status["mig"]["unit"] == "MIG slice 1g.10gb (not a whole GPU)"
    assert status["neuron"]["unit"] == unit_of("aws.amazon.com/neuron")
    assert api.invalid == []


def test_a_capacity_buffer_of_a_neuron_pool_holds_neuron_devices(tmp_path: Path) -> None:
    """The CapacityBuffer backend: its PodTemplate asks for the pool's resource, its limit is in
    it, and Karpenter (the double) launches the pool's nodes for it."""
    with KubeApiDouble(capacity_buffers=True) as api:
        api.clock = float(T0)
        sim = ClusterSim(api, buffer_controller=True)
        sim.add_nodepool("neuron", limit_gpus=LIMIT, resource=POOLS["neuron"])
        sim.add_node("neuron")
        sim.submit("train", "neuron", 8)
        sim.step()
        neuron = {**pools_config()[2], "backend": "capacitybuffer", "max_prewarm_gpus": 16}
        source = LiveSource(T0 - 2 * 86400, calm_history(level=8.0))
        daemon = Daemon(
            reconciler=reconciler(tmp_path, api, source, pools=[neuron]), pools=("neuron",)
        )
        for i in range(3):
            api.clock = float(T0 + 120 * i)
            record = daemon.reconcile(T0 + 120 * i)
            assert record is not None and not record.errors, record and record.errors
            sim.step()
        (buffer,) = api.objects("capacitybuffers", "forecaster-placeholders")
        assert buffer["spec"]["limits"] == {POOLS["neuron"]: "16"}
        (template,) = api.objects("podtemplates", "forecaster-placeholders")
        requests = template["template"]["spec"]["containers"][0]["resources"]["requests"]
        assert requests[POOLS["neuron"]] == "8" and "nvidia.com/gpu" not in requests
        assert len(api.objects("nodes")) > 1  # Karpenter launched Neuron nodes for it
        assert api.objects("pods", "forecaster-placeholders") == []
    assert api.invalid == [], api.invalid


def test_doctor_says_each_pools_unit_and_reads_notice_in_it(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    cluster(api)
    config = Settings.model_validate(
        {"models_dir": str(tmp_path / "models"), "pools": pools_config()}
    )
    assert doctor.unit_lines(config)[0] == (
        "pool mig: counted in MIG slice 1g.10gb (not a whole GPU) (nvidia.com/mig-1g.10gb):"
        " its demand, prewarm, caps and prices are in that unit"
    )
    assert len(doctor.unit_lines(config)) == 3
    lines = doctor.notice_lines(config, client(api), now=T0)
    assert "notice cronjob: 1 item(s) announced; soonest: cronjob ml/nightly@" in lines[0]
    assert "(8 GPUs, neuron)" in lines[0]  # 2 pods x 4 devices, in the pool's unit


def test_the_guardrail_looks_for_the_limit_on_the_pools_resource(api: KubeApiDouble) -> None:
    sim = ClusterSim(api)
    sim.add_nodepool("amd", limit_gpus=LIMIT, resource="amd.com/gpu")
    sim.add_nodepool("amd-on-gpu-limit", limit_gpus=LIMIT)  # limits nvidia.com/gpu only
    findings = guardrails.check(
        client(api),
        [
            PoolCheck("amd", False, 600, 0, resource="amd.com/gpu"),
            PoolCheck("amd-on-gpu-limit", False, 600, 0, resource="amd.com/gpu"),
        ],
        now=T0,
    )
    unlimited = [f for f in findings if f.code == "nodepool-unlimited"]
    assert [(f.pool, f.message.split(" (")[0]) for f in unlimited] == [
        ("amd-on-gpu-limit", "NodePool amd-on-gpu-limit has no amd.com/gpu limit")
    ]


@pytest.mark.parametrize(
    ("resource", "reason"),
    [
        (["nvidia.com/gpu", "nvidia.com/mig-1g.10gb"], "one accelerator resource per pool"),
        ("cpu", "is not an extended resource name"),
        ("hugepages-2Mi", "is not an extended resource name"),
        ("kubernetes.io/batteries", "is not an accelerator resource"),
    ],
)
def test_a_pool_of_several_resources_or_none_is_refused_with_the_reason(
    tmp_path: Path, resource: object, reason: str
) -> None:
    with pytest.raises(ValidationError, match=reason):
        Settings.model_validate({"pools": [{"name": "mixed", "resource": resource}]})


def test_kube_state_metrics_names_each_resource_as_the_queries_do() -> None:
    assert metric_label("nvidia.com/gpu") == "nvidia_com_gpu"
    assert metric_label("nvidia.com/mig-1g.10gb") == "nvidia_com_mig_1g_10gb"
    assert metric_label("aws.amazon.com/neuroncore") == "aws_amazon_com_neuroncore"
