"""One namespace's announced work cannot spend the day budget another pool's floor lives on.

On the API double, two pools share a 200 GPU-hours/day budget: ``other`` holds a 16-GPU floor,
``shared`` prewarms its forecast. A tenant namespace without GPU quota runs a ``* * * * *``
CronJob on ``shared`` whose runs never make a pod: each run is announced, planned (16 GPUs)
and charged, minute after minute, for a day before its namespace is judged untrustworthy. With
``notice.namespace_share`` (0.25 by default) its items are not planned once they have held a
quarter of the day budget, so the floor of ``other`` is cut (the budget spent) no earlier than
in the same run without the tenant's objects, beyond what that share buys: at the rate the
run without the tenant spends, ``share x budget / rate`` hours.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build
from forecaster.core.budget import spent_last_day
from forecaster.service.daemon import Daemon
from forecaster.settings import Settings
from tests.factories import cronjob, one_pool_settings
from tests.kubeapi.cluster import ClusterSim
from tests.kubeapi.server import KubeApiDouble
from tests.service.fakes import POOL, T0, LiveSource

BUDGET = 200.0
FLOOR = 16
TICK = 300


def floor_cut(tmp_path: Path, *, tenant: bool, share: float | None = None) -> tuple[int, float]:
    """When ``other``'s floor was first cut (seconds from T0), and the GPU-hours spent then
    (``share``: ``notice.namespace_share``, else its default)."""
    notice = {} if share is None else {"namespace_share": share}
    config = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "notice": notice,
            "models_dir": str(tmp_path / f"models-{tenant}-{share}"),
            "planning": {
                "actuation": "placeholders",
                "budgets": {"max_total_prewarm_gpus": 64, "max_prewarm_gpu_hours_per_day": BUDGET},
            },
            "pools": [
                {"name": "other", "gpus_per_node": 8, "max_prewarm_gpus": 32, "floor_gpus": FLOOR},
                {"name": "shared", "gpus_per_node": 8, "max_prewarm_gpus": 32},
            ],
        }
    )
    with KubeApiDouble() as api:
        api.clock = float(T0)
        sim = ClusterSim(api)
        for pool in ("other", "shared"):
            sim.add_nodepool(pool, limit_gpus=400)
            sim.add_node(pool)
        if tenant:
            greedy = cronjob("every-minute", pool="shared", schedule="* * * * *")
            greedy["metadata"]["namespace"] = "no-quota"
            api.put("cronjobs", greedy)
        source = LiveSource(T0 - 2 * 86400, [2.0] * 2881)
        kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        loop = build.build_reconciler(config, source=source, kube=kube)
        daemon = Daemon(reconciler=loop, pools=("other", "shared"))
        for now in range(T0, T0 + 13 * 3600 + 1, TICK):
            if now > T0:
                source.append(*([2.0] * (TICK // 60)))
            api.clock = float(now)
            if tenant:  # the controller moves on every minute: no pod, ever
                obj = api.objects("cronjobs", "no-quota")[0]
                ran = datetime.fromtimestamp(now - now % 60, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                obj["status"] = {"lastScheduleTime": ran}
                api.store.replace(("cronjobs", "no-quota", "every-minute"), obj)
            record = daemon.reconcile(now)
            assert record is not None
            sim.step()
            if record.plan.pool("other").target_gpus < FLOOR:
                return now - T0, spent_last_day(loop.state.ledger)
    raise AssertionError("the floor was never cut")


def test_a_tenants_notice_brings_the_floor_cut_no_earlier_than_its_share_buys(
    tmp_path: Path,
) -> None:
    alone, spent = floor_cut(tmp_path, tenant=False)
    rate = spent / (alone / 3600)  # GPU-hours an hour the run without the tenant spends
    share = Settings.model_fields["notice"].default.namespace_share
    with_tenant, _ = floor_cut(tmp_path, tenant=True)
    earliest = alone - share * BUDGET / rate * 3600 - TICK
    assert with_tenant >= earliest, (alone / 3600, with_tenant / 3600, earliest / 3600)
    assert with_tenant < alone  # the tenant did spend (its share)


def test_a_namespaces_work_due_at_once_is_planned_up_to_its_share_of_the_pool(
    tmp_path: Path,
) -> None:
    """``notice.namespace_gpu_share`` (0.5) of the pool's 64 GPUs: three 16-GPU runs of one
    namespace due at once are planned up to 32 GPUs, the latest left out and said; another
    namespace's run beside them is planned whole."""
    config = one_pool_settings(tmp_path)
    with KubeApiDouble() as api:
        api.clock = float(T0)
        ClusterSim(api).busy_pool(POOL, limit_gpus=400)
        for name in ("a", "b", "c"):
            api.put("cronjobs", cronjob(name, pool=POOL))
        theirs = cronjob("theirs", pool=POOL)
        theirs["metadata"]["namespace"] = "team-b"
        api.put("cronjobs", theirs)
        kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        source = LiveSource(T0 - 2 * 86400, [16.0] * 2881)
        loop = build.build_reconciler(config, source=source, kube=kube)
        record = Daemon(reconciler=loop, pools=(POOL,)).reconcile(T0)
        assert api.invalid == [], api.invalid
    assert record is not None
    plan = record.plan.pool(POOL)
    assert plan.target_gpus == 48, plan.reasons  # ml's a and b (32), team-b's 16
    assert (
        "namespace ml's announced work due at once is past its share (32 of this pool's"
        " prewarm GPUs): its 16 GPUs due not planned" in plan.reasons
    )
