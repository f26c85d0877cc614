"""The actuator through the real kubernetes client against the API server double.

Cases: prewarm creates placeholder Jobs (do-not-disrupt pods) that Karpenter turns into nodes,
with no NodePool write by default; an opted-in pool gets its NodePool paused first (exact merge
patch with resourceVersion, originals, applied values and a deadline); real pods preempt
placeholders and the Job controller does not recreate them; hand-off withdraws everything and
restores the NodePool byte for byte (with and without original budgets); a restart mid-prewarm
converges with no duplicates; expired placeholders are cleaned up and counted as waste; a
Pending placeholder is gone by its deadline with no daemon; an unsafe PriorityClass is refused;
a 409 on the NodePool is re-read and retried; 5xx are retried; dry-run and forecast-only send
zero writes; the CapacityBuffer backend writes valid buffers with a deadline.
Every object sent is validated by the double against the real schemas (fixture asserts).
"""

from __future__ import annotations

import copy
import json

import pytest

from forecaster.actuators.actuator import Actuator, PoolActuation
from forecaster.actuators.events import Events
from forecaster.actuators.kube import Kube, api_client
from forecaster.actuators.nodepools import NodePoolConflictError, NodePools
from forecaster.actuators.observe.observer import observe
from forecaster.actuators.prewarm.placeholders import Placeholders, PlaceholderSpec
from forecaster.actuators.prewarm.registry import make_backends
from forecaster.core.actions import commands
from forecaster.core.cluster import DemandForecast, PoolSnapshot
from forecaster.core.planner import Mode, Plan, PoolInput, plan
from forecaster.core.policy import Budgets, PoolPolicy
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from tests.factories import policy as pool_policy

NS = "forecaster"
POOL = "gpu-a"
BUDGETS = Budgets(
    max_total_prewarm_gpus=64,
    max_prewarm_gpu_hours_per_day=1000,
    max_cost_per_hour=1000,
    commitment_seconds=3600,
)
POLICY = pool_policy(POOL)


def actuator(kube: Kube, *, backend: str = "placeholders") -> Actuator:
    return Actuator(
        backends=make_backends(kube, NS, "forecaster-placeholder"),
        nodepools=NodePools(kube),
        events=Events(kube, NS),
        pools={POOL: PoolActuation(PlaceholderSpec(pool=POOL, gpus=8), backend=backend)},  # type: ignore[arg-type]
    )


def make_plan(
    snapshot: PoolSnapshot,
    *,
    p95: float,
    now: int,
    mode: Mode = Mode.PREDICTIVE,
    policy: PoolPolicy = POLICY,
) -> Plan:
    forecast = DemandForecast(
        POOL, p50_gpus=p95 - 4, upper_gpus=p95, data_end=now, model="test", quantile=0.95
    )
    return plan(
        [PoolInput(policy, snapshot, forecast, mode)],
        budgets=BUDGETS,
        spent_gpu_hours_last_day=0,
        now=now,
    )


def setup_cluster(sim: ClusterSim, **nodepool: object) -> dict[str, object]:
    original = sim.add_nodepool(POOL, limit_gpus=64, **nodepool)  # type: ignore[arg-type]
    for _ in range(2):
        sim.add_node(POOL)
    for i in range(2):
        sim.submit(f"job-{i}", POOL, 8)
    sim.step()
    return original


def now_of(api: KubeApiDouble) -> int:
    return int(api.clock)


def placeholder_pods(api: KubeApiDouble) -> list[dict[str, object]]:
    """Our placeholder pods that still hold (or wait for) a GPU."""
    return [
        p
        for p in api.objects("pods", NS)
        if p.get("status", {}).get("phase", "Pending") in ("Pending", "Running")
    ]


def ramp(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube, *, policy: PoolPolicy = POLICY
) -> Actuator:
    act = actuator(kube)
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    act.apply(commands(make_plan(snap, p95=40, now=now_of(api), policy=policy)), now=now_of(api))
    sim.step()  # the Job controller creates the placeholder pods
    return act


PAUSING = pool_policy(POOL, protect_nodepool=True)


def test_prewarm_creates_placeholder_jobs_and_leaves_the_nodepool_alone(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim)
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    assert (snap.allocatable_gpus, snap.running_gpus, snap.prewarm_gpus) == (16, 16, 0)
    before = len(api.requests)
    actuator(kube).apply(commands(make_plan(snap, p95=40, now=now_of(api))), now=now_of(api))
    writes = [r for r in api.requests[before:] if r.method != "GET"]
    assert [w.path for w in writes] == [f"/apis/batch/v1/namespaces/{NS}/jobs"] * 3  # 3 x 8
    job = writes[0].body
    assert job["spec"]["activeDeadlineSeconds"] == 3600  # counts from the Job's start
    assert job["spec"]["ttlSecondsAfterFinished"] > 0 and job["spec"]["backoffLimit"] == 0
    assert job["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
        {"type": "DisruptionTarget", "status": "True"}
    ]
    template = job["spec"]["template"]
    assert template["metadata"]["annotations"]["karpenter.sh/do-not-disrupt"] == "true"
    assert template["spec"]["priorityClassName"] == "forecaster-placeholder"
    assert template["spec"]["nodeSelector"] == {"karpenter.sh/nodepool": POOL}
    assert template["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "8"
    assert {w.body["metadata"]["labels"]["forecaster.io/slot"] for w in writes} == {"0", "1", "2"}
    # the Job controller makes the pods; Karpenter brings up nodes; they bind once Ready
    sim.step()
    assert len(api.objects("nodes")) == 5
    api.clock += 60
    sim.step()
    sim.step()
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    assert (snap.allocatable_gpus, snap.prewarm_gpus, snap.pending_gpus) == (40, 24, 0)
    assert snap.held_gpus == 24  # three nodes that only we occupy
    assert all(p["status"]["phase"] == "Running" for p in placeholder_pods(api))


def test_an_opted_in_pool_pauses_its_nodepool_first_with_a_deadline(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    original = setup_cluster(sim, budgets=[{"nodes": "20%"}])
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    before = len(api.requests)
    actuator(kube).apply(
        commands(make_plan(snap, p95=40, now=now_of(api), policy=PAUSING)), now=now_of(api)
    )
    writes = [r for r in api.requests[before:] if r.method != "GET"]
    assert (
        writes[0].method == "PATCH" and writes[0].path == f"/apis/karpenter.sh/v1/nodepools/{POOL}"
    )
    assert writes[0].content_type == "application/merge-patch+json"
    applied = {
        "consolidateAfter": "30m",
        "budgets": [{"nodes": "20%"}, {"nodes": "0", "reasons": ["Empty", "Underutilized"]}],
    }
    record = {
        "format": 1,
        "original": {"budgets": [{"nodes": "20%"}], "consolidateAfter": "30s"},
        "applied": applied,
        "until": now_of(api) + 3600,
    }
    assert writes[0].body == {
        "metadata": {
            "resourceVersion": original["metadata"]["resourceVersion"],  # type: ignore[index]
            "annotations": {
                "forecaster.io/original-disruption": json.dumps(record, sort_keys=True)
            },
        },
        "spec": {"disruption": applied},
    }
    assert [w.method for w in writes[1:]] == ["POST"] * 3


def test_a_pending_placeholder_is_gone_by_its_deadline_without_the_daemon(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    sim.add_nodepool(POOL, limit_gpus=0)  # Karpenter can launch nothing: placeholders stay Pending
    actuator(kube).apply(
        commands(
            make_plan(PoolSnapshot(POOL, now_of(api), 0, 0, 0, 0, 0, 64), p95=16, now=now_of(api))
        ),
        now=now_of(api),
    )
    sim.step()
    assert [p["status"]["phase"] for p in placeholder_pods(api)] == ["Pending", "Pending"]
    api.clock += 3600  # the daemon is gone; nobody renews or deletes anything
    sim.step()
    assert placeholder_pods(api) == []
    api.clock += 600
    sim.step()
    assert api.objects("jobs", NS) == [] and api.objects("pods", NS) == []


@pytest.mark.parametrize(
    ("value", "policy"), [(1000, "Never"), (-10, "PreemptLowerPriority"), (-11, "Never")]
)
def test_an_unsafe_priority_class_is_refused(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube, value: int, policy: str
) -> None:
    sim.add_priority_class(value=value, preemption_policy=policy)
    sim.add_nodepool(POOL, limit_gpus=64)
    sim.add_node(POOL)
    sim.submit("job-0", POOL, 8)
    sim.step()
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    report = actuator(kube).apply(
        commands(make_plan(snap, p95=40, now=now_of(api))), now=now_of(api)
    )
    assert "PriorityClass forecaster-placeholder" in report.errors[POOL]
    assert api.objects("jobs", NS) == []
    assert [p["metadata"]["name"] for p in api.objects("pods")] == ["job-0"]  # nothing preempted


def test_real_pods_preempt_placeholders(api: KubeApiDouble, sim: ClusterSim, kube: Kube) -> None:
    setup_cluster(sim)
    ramp(api, sim, kube)
    sim.step()
    api.clock += 60
    sim.step()
    sim.step()
    sim.submit("urgent", POOL, 8)
    sim.step()
    assert len(sim.preempted) == 1 and len(placeholder_pods(api)) == 2
    urgent = next(p for p in api.objects("pods", "ml") if p["metadata"]["name"] == "urgent")
    assert urgent["status"]["phase"] == "Running"  # no wait for a new node
    sim.step()  # the Job controller fails the preempted Job and does not recreate its pod
    assert len(placeholder_pods(api)) == 2
    # the next tick plans from the new demand, not by re-creating the preempted one blindly
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    assert snap.running_gpus == 24 and snap.prewarm_gpus == 16
    next_plan = make_plan(snap, p95=40, now=now_of(api))
    assert next_plan.pools[0].target_gpus == 16


@pytest.mark.parametrize("budgets", [None, [{"nodes": "5", "reasons": ["Drifted"]}]])
def test_hand_off_withdraws_everything_and_restores_the_nodepool_byte_for_byte(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube, budgets: list[dict[str, object]] | None
) -> None:
    setup_cluster(sim, budgets=budgets)
    original = copy.deepcopy(api.objects("nodepools")[0])
    act = ramp(api, sim, kube, policy=PAUSING)
    protected = api.objects("nodepools")[0]
    assert protected["spec"] != original["spec"]
    if budgets is None:  # Karpenter's implicit default stays in force while protected
        assert protected["spec"]["disruption"]["budgets"][0] == {"nodes": "10%"}
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    act.apply(
        commands(make_plan(snap, p95=40, now=now_of(api), mode=Mode.HANDED_OFF, policy=PAUSING)),
        now=now_of(api),
    )
    restored = api.objects("nodepools")[0]
    assert api.objects("jobs", NS) == [] and placeholder_pods(api) == []
    assert restored["spec"] == original["spec"]
    assert restored["metadata"].get("annotations") == original["metadata"].get("annotations")
    assert json.dumps(restored["spec"], sort_keys=True) == json.dumps(
        original["spec"], sort_keys=True
    )


def test_restart_mid_prewarm_converges_without_duplicates(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim)
    first = actuator(kube)
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    the_plan = make_plan(snap, p95=40, now=now_of(api))
    original_create = kube.create_job
    calls = {"n": 0}

    def killed_on_second(namespace: str, body: dict[str, object]) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise SystemExit("daemon killed between two writes")
        original_create(namespace, body)

    kube.create_job = killed_on_second  # type: ignore[method-assign]
    with pytest.raises(SystemExit):
        first.apply(commands(the_plan), now=now_of(api))
    assert len(api.objects("jobs", NS)) == 1
    # a new process with a new client converges to the plan, filling only the empty slots
    fresh = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
    snap = observe(fresh, pools=[POOL], now=now_of(api) + 30)[POOL]
    actuator(fresh).apply(
        commands(make_plan(snap, p95=40, now=now_of(api) + 30)), now=now_of(api) + 30
    )
    jobs = api.objects("jobs", NS)
    assert sorted(j["metadata"]["labels"]["forecaster.io/slot"] for j in jobs) == ["0", "1", "2"]
    # and another tick changes nothing
    before = len(api.writes())
    snap = observe(fresh, pools=[POOL], now=now_of(api) + 60)[POOL]
    actuator(fresh).apply(
        commands(make_plan(snap, p95=40, now=now_of(api) + 60)), now=now_of(api) + 60
    )
    assert len(api.writes()) == before


def test_expired_placeholders_are_removed_and_counted_as_waste(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim)
    act = ramp(api, sim, kube)
    sim.step()
    api.clock += 60
    sim.step()
    sim.step()
    api.clock += 3600  # the daemon stopped renewing: placeholders expire by themselves
    sim.step()
    assert placeholder_pods(api) == []
    assert all(
        j["status"]["conditions"][0]["reason"] == "DeadlineExceeded"
        for j in api.objects("jobs", NS)
    )
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    assert snap.prewarm_gpus == 0  # expired placeholders hold nothing
    report = act.apply(commands(make_plan(snap, p95=16, now=now_of(api))), now=now_of(api))
    assert report.wasted_gpu_hours[POOL] == pytest.approx(3 * 8 * 1.0)
    assert api.objects("jobs", NS) == []


def test_nodepool_conflict_is_reread_and_retried(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim)
    api.faults.add("PATCH", r"/nodepools/", status=409, times=2)
    assert NodePools(kube).protect(POOL, consolidate_after="30m", now=now_of(api), seconds=3600)
    patches = [r for r in api.requests if r.method == "PATCH"]
    assert len(patches) == 3
    assert NodePools(kube).protected_until(POOL) == now_of(api) + 3600


def test_server_errors_are_retried(api: KubeApiDouble, sim: ClusterSim, kube: Kube) -> None:
    setup_cluster(sim)
    api.faults.add("POST", r"/jobs$", status=503, times=2)
    ramp(api, sim, kube)
    assert len(placeholder_pods(api)) == 3


def test_persistent_errors_are_reported_per_pool_not_raised(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim)
    api.faults.add("POST", r"/jobs$", status=500, times=100)
    act = actuator(kube)
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    report = act.apply(commands(make_plan(snap, p95=40, now=now_of(api))), now=now_of(api))
    assert "HTTP 500" in report.errors[POOL]
    assert api.objects("jobs", NS) == []


def test_dry_run_sends_zero_writes(api: KubeApiDouble, sim: ClusterSim) -> None:
    setup_cluster(sim)
    before = len(api.writes())
    dry = Kube(api_client(host=api.url), dry_run=True)
    act = actuator(dry)
    snap = observe(dry, pools=[POOL], now=now_of(api))[POOL]
    act.apply(commands(make_plan(snap, p95=40, now=now_of(api))), now=now_of(api))
    act.apply(
        commands(make_plan(snap, p95=40, now=now_of(api), mode=Mode.HANDED_OFF)), now=now_of(api)
    )
    assert len(api.writes()) == before


def test_forecast_only_pools_are_never_touched(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim)
    before = len(api.writes())
    act = actuator(kube)
    writes_setup = len(api.writes())
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    only = pool_policy(POOL, forecast_only=True)
    act.apply(commands(make_plan(snap, p95=40, now=now_of(api), policy=only)), now=now_of(api))
    assert len(api.writes()) == writes_setup == before


def test_capacity_buffer_backend(api: KubeApiDouble, sim: ClusterSim, kube: Kube) -> None:
    setup_cluster(sim)
    assert kube.serves_capacity_buffers(NS)
    act = actuator(kube, backend="capacitybuffer")
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    act.apply(commands(make_plan(snap, p95=40, now=now_of(api))), now=now_of(api))
    (buffer,) = api.objects("capacitybuffers", NS)
    assert buffer["spec"] == {"podTemplateRef": {"name": f"forecaster-{POOL}"}, "replicas": 3}
    assert buffer["metadata"]["annotations"]["forecaster.io/expires-at"] == str(now_of(api) + 3600)
    assert api.objects("podtemplates", NS)[0]["template"]["spec"]["nodeSelector"] == {
        "karpenter.sh/nodepool": POOL
    }
    act.apply(
        commands(make_plan(snap, p95=40, now=now_of(api), mode=Mode.HANDED_OFF)), now=now_of(api)
    )
    assert api.objects("capacitybuffers", NS)[0]["spec"]["replicas"] == 0
    assert placeholder_pods(api) == []


def test_capacity_buffers_not_served_is_detected() -> None:
    with KubeApiDouble(capacity_buffers=False) as server:
        kube = Kube(api_client(host=server.url), dry_run=False)
        assert not kube.serves_capacity_buffers(NS)


def test_restore_leaves_a_field_someone_else_changed_and_reports_it(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim, budgets=[{"nodes": "20%"}])
    pools = NodePools(kube)
    assert pools.protect(POOL, consolidate_after="30m", now=now_of(api), seconds=3600)
    edited = api.objects("nodepools")[0]
    edited["spec"]["disruption"]["consolidateAfter"] = "2h"  # Argo CD / an operator, meanwhile
    api.store.replace(("nodepools", "", POOL), edited)
    assert pools.restore(POOL)
    restored = api.objects("nodepools")[0]
    assert restored["spec"]["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "2h",  # theirs, left in place
        "budgets": [{"nodes": "20%"}],  # ours, restored
    }
    assert "annotations" not in restored["metadata"]
    assert "consolidateAfter changed by someone else" in pools.conflicts[POOL]


def test_a_lost_or_damaged_record_is_never_taken_as_the_original(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim)
    pools = NodePools(kube)
    assert pools.protect(POOL, consolidate_after="30m", now=now_of(api), seconds=3600)
    lost = api.objects("nodepools")[0]
    del lost["metadata"]["annotations"]  # someone stripped our record
    api.store.replace(("nodepools", "", POOL), lost)
    before = len(api.writes())
    with pytest.raises(NodePoolConflictError, match="no record of the original"):
        pools.protect(POOL, consolidate_after="30m", now=now_of(api), seconds=3600)
    damaged = api.objects("nodepools")[0]
    damaged["metadata"]["annotations"] = {"forecaster.io/original-disruption": '{"budgets": 1}'}
    api.store.replace(("nodepools", "", POOL), damaged)
    with pytest.raises(NodePoolConflictError, match="damaged"):
        pools.restore(POOL)
    assert len(api.writes()) == before  # nothing written back, verbatim or otherwise


def test_a_steady_pause_is_extended_only_when_half_its_deadline_is_gone(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim)
    pools = NodePools(kube)
    t = now_of(api)
    assert pools.protect(POOL, consolidate_after="30m", now=t, seconds=3600)
    assert not pools.protect(POOL, consolidate_after="30m", now=t + 1700, seconds=3600)
    assert pools.protect(POOL, consolidate_after="30m", now=t + 1900, seconds=3600)
    assert pools.protected_until(POOL) == t + 1900 + 3600
    assert not pools.restore(POOL, expired_before=t + 1900 + 3600)
    assert pools.restore(POOL, expired_before=t + 1900 + 3601)


def test_a_flapping_target_does_not_flap_the_nodepool(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim)
    act = actuator(kube)
    start = now_of(api)
    for minute in range(20):  # prewarm needed every other minute
        api.clock = float(start + 60 * minute)
        snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
        p95 = 40 if minute % 2 == 0 else 16
        act.apply(
            commands(make_plan(snap, p95=p95, now=now_of(api), policy=PAUSING)), now=now_of(api)
        )
        sim.step()
    patches = [r for r in api.requests if r.method == "PATCH" and "/nodepools/" in r.path]
    assert len(patches) == 1  # paused once, held through the flapping
    # prewarm ends for good: the pause is held to its deadline, then restored
    api.clock = float(start + 3601)
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    act.apply(commands(make_plan(snap, p95=16, now=now_of(api), policy=PAUSING)), now=now_of(api))
    assert "annotations" not in api.objects("nodepools")[0]["metadata"]


def test_empty_nodes_kept_by_our_pause_are_billed_to_us(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim)
    sim.add_node(POOL)  # an empty node: Karpenter would consolidate it, unless we pause
    assert observe(kube, pools=[POOL], now=now_of(api))[POOL].held_gpus == 0
    assert NodePools(kube).protect(POOL, consolidate_after="30m", now=now_of(api), seconds=3600)
    assert observe(kube, pools=[POOL], now=now_of(api))[POOL].held_gpus == 8


def test_a_gitops_edit_during_the_pause_is_reported_by_the_tick(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    setup_cluster(sim)
    act = ramp(api, sim, kube, policy=PAUSING)
    edited = api.objects("nodepools")[0]
    edited["spec"]["disruption"]["consolidateAfter"] = "5m"  # Argo CD syncs its own value
    api.store.replace(("nodepools", "", POOL), edited)
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    handed_off = make_plan(snap, p95=40, now=now_of(api), mode=Mode.HANDED_OFF, policy=PAUSING)
    report = act.apply(commands(handed_off), now=now_of(api))
    assert "consolidateAfter changed by someone else" in report.errors[POOL]
    assert api.objects("nodepools")[0]["spec"]["disruption"]["consolidateAfter"] == "5m"
    (event,) = api.objects("events", NS)  # kubectl describe nodepool shows it
    assert event["type"] == "Warning" and event["reason"] == "RestoreConflict"
    assert event["involvedObject"] == {  # in the Event's namespace: the API server wants it
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "name": POOL,
        "namespace": NS,
    }
    assert event["message"] == report.errors[POOL]


def test_new_placeholders_pull_the_images_the_pools_pods_ran(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    """The observer names the images of the pool's recent pods that need no pull secret, most
    GPUs first; new placeholders pull them in init containers that run a static ``true``
    copied from the helper image (valid against the real Pod schema), then run pause."""
    setup_cluster(sim)  # two 8-GPU pods of ml/train:1
    like = sim.submit("eval-job", POOL, 4)
    for name, image, secret in (
        ("eval", "ml/eval:2", None),
        ("private", "corp/secret:1", "regcred"),
    ):
        spec = {**like["spec"], "containers": [{**like["spec"]["containers"][0], "image": image}]}
        if secret:
            spec["imagePullSecrets"] = [{"name": secret}]
        api.put(
            "pods",
            {**like, "metadata": {"name": name, "namespace": "ml"}, "spec": spec, "status": {}},
        )
    snap = observe(kube, pools=[POOL], now=now_of(api))[POOL]
    assert snap.recent_images == ("ml/train:1", "ml/eval:2")  # 20 and 4 GPUs; never the private
    before = len(api.requests)
    act = actuator(kube)
    plan_now = make_plan(snap, p95=60, now=now_of(api))
    act.apply(commands(plan_now, images={POOL: snap.recent_images}), now=now_of(api))
    created = [r.body for r in api.requests[before:] if r.method == "POST"]
    assert created
    pod = created[0]["spec"]["template"]["spec"]
    assert [c["image"] for c in pod["initContainers"]] == [
        "docker.io/library/busybox:1.36.1-musl",
        "ml/train:1",
        "ml/eval:2",
    ]
    assert pod["initContainers"][1]["command"] == ["/forecaster-warm/true"]
    assert pod["containers"][0]["image"] == "registry.k8s.io/pause:3.10"
    assert pod["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "8"
    assert api.invalid == []  # the real Pod schema accepted it


@pytest.mark.parametrize("labels", [{}, {"app.kubernetes.io/managed-by": "forecaster"}])
def test_a_name_taken_by_a_job_not_ours_is_an_actuation_error_not_prewarm(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube, labels: dict[str, str]
) -> None:
    """A 409 on creating a placeholder counts as created only if the Job there is our
    placeholder of this pool; anything else is the pool's actuation error naming the conflict."""
    setup_cluster(sim)
    now = now_of(api)
    squatter = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"forecaster-{POOL}-0-{now}", "namespace": NS, "labels": labels},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}
            }
        },
    }
    api.put("jobs", squatter)
    snap = observe(kube, pools=[POOL], now=now)[POOL]
    report = actuator(kube).apply(commands(make_plan(snap, p95=40, now=now)), now=now)
    assert f"forecaster-{POOL}-0-{now} already exists and is not ours" in report.errors[POOL]


def test_a_409_on_our_own_placeholder_counts_as_created(
    api: KubeApiDouble, sim: ClusterSim, kube: Kube
) -> None:
    """The earlier try of this tick created it (a timeout after the write): it is ours."""
    setup_cluster(sim)
    now = now_of(api)
    placeholders = Placeholders(kube, namespace=NS, priority_class="forecaster-placeholder")
    spec = PlaceholderSpec(pool=POOL, gpus=8)
    first = placeholders._create(spec, slot=0, now=now)
    assert placeholders._create(spec, slot=0, now=now) == first
    assert len(api.objects("jobs", NS)) == 1
