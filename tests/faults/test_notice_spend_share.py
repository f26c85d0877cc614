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

from pathlib import Path

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build
from forecaster.service.daemon import Daemon
from forecaster.settings import Settings
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import cronjob
from forecaster.testing.scenarios import BUDGET, TICK, floor_cut
from tests.factories import one_pool_settings


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
