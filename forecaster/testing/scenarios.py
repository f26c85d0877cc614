"""Scenarios a test and a bench both run (the bench measures what the test bounds).

``floor_cut``: two pools share a day budget of GPU-hours; ``other`` holds a floor, ``shared``
prewarms its forecast, and a tenant namespace without GPU quota may run a ``* * * * *`` CronJob
on ``shared`` whose runs never make a pod (``tests/faults/test_notice_spend_share.py``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build
from forecaster.core.budget import spent_last_day
from forecaster.service.daemon import Daemon
from forecaster.settings import Settings
from forecaster.testing.fakes import T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import cronjob

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
