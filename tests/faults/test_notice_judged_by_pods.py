"""Announced work is judged by its pods, on the API double through the daemon's reconciler.

Cases - each would have been scored as come, and held, before: a ``* * * * *`` CronJob of a
namespace without GPU quota, whose controller moves ``lastScheduleTime`` every minute but whose
runs never make a pod, is judged not come run after run (precision 0, its waste charged), and
within 25 h its namespace is cut while another namespace's hourly CronJob, whose runs make
pods, stays trusted and planned; a
JobSet stage waiting on an initializer that never finishes (no earlier run to time it by: due
"now" at every reading) and an Argo step whose upstream's status its owner wrote (``Succeeded``
without ``finishedAt``: due "now" at every reading) are withdrawn at their first deadline, charged
once, and not planned again.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build
from forecaster.reconcile.records import TickRecord
from forecaster.service.daemon import Daemon
from forecaster.testing.fakes import POOL, T0, LiveSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import cronjob
from tests.factories import argo_workflow, jobset, one_pool_settings

GRACE = 600


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble(jobsets=True, argo=True) as server:
        server.clock = float(T0)
        ClusterSim(server).busy_pool(POOL, limit_gpus=400)
        yield server
    assert server.invalid == [], server.invalid


def daemon(tmp_path: Path, *, day_budget: float | None = None) -> Any:
    """A tick function: the daemon on POOL at ``now`` (flat demand: 16 GPUs, all running);
    ``day_budget``: the GPU-hours/day budget (each namespace's notice may hold a quarter)."""
    config = one_pool_settings(tmp_path)
    if day_budget is not None:
        caps = config.planning.budgets.model_copy(
            update={"max_prewarm_gpu_hours_per_day": day_budget}
        )
        planning = config.planning.model_copy(update={"budgets": caps})
        config = config.model_copy(update={"planning": planning})
    source = LiveSource(T0 - 2 * 86400, [16.0] * 2881)
    last = [T0]

    def tick(api: KubeApiDouble, now: int) -> TickRecord:
        kube = Kube(api_client(host=api.url), dry_run=False, backoff_seconds=0.01)
        if not hasattr(tick, "daemon"):
            loop = build.build_reconciler(config, source=source, kube=kube)
            tick.daemon = Daemon(reconciler=loop, pools=(POOL,))  # type: ignore[attr-defined]
        source.append(*([16.0] * ((now - last[0]) // 60)))
        last[0] = now
        api.clock = float(now)
        record = tick.daemon.reconcile(now)  # type: ignore[attr-defined]
        assert record is not None
        return record

    return tick


def status_of(record: TickRecord, source: str) -> Any:
    (found,) = [s for s in record.notice if s.source == source]
    return found


def test_a_cronjob_whose_runs_make_no_pod_is_judged_not_come_run_after_run(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    greedy = cronjob("every-minute", pool=POOL, schedule="* * * * *")
    greedy["metadata"]["namespace"] = "no-quota"
    api.put("cronjobs", greedy)
    tick = daemon(tmp_path)
    for now in range(T0, T0 + 40 * 60 + 1, 60):  # the controller moves on: no pod, ever
        obj = api.objects("cronjobs", "no-quota")[0]
        ran = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        obj["status"] = {"lastScheduleTime": ran}
        api.store.replace(("cronjobs", "no-quota", "every-minute"), obj)
        record = tick(api, now)
    status = status_of(record, "cronjob")
    assert status.resolved >= 25 and status.precision == 0.0  # (scored 1.0 before)
    assert status.waste_gpu_hours > 0
    assert {o.came for o in record.notice_ended} <= {False}


def assert_withdrawn_once(tick: Any, api: KubeApiDouble, source: str) -> None:
    """Due now at every reading: planned until its first deadline, then withdrawn and charged
    once, and not planned again while its owner keeps announcing it."""
    first = tick(api, T0)
    assert first.plan.pool(POOL).target_gpus == 16
    ended = []
    for now in range(T0 + 60, T0 + 3600 + 1, 60):
        record = tick(api, now)
        ended += [o for o in record.notice_ended if o.source == source]
        if now <= T0 + GRACE:
            assert record.plan.pool(POOL).target_gpus == 16, now
    (gone,) = ended  # once
    assert not gone.came and gone.at == T0 + GRACE + 60
    assert gone.held_gpu_hours == 16 * GRACE / 3600  # due from its first reading to its deadline
    assert record.plan.pool(POOL).target_gpus == 0  # still announced, no longer planned
    assert status_of(record, source).precision == 0.0


def test_a_jobset_stage_whose_initializer_never_finishes_is_withdrawn_once(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    api.put("jobsets", jobset("stuck", pool=POOL, owner=None))  # no earlier run: due "now"
    assert_withdrawn_once(daemon(tmp_path), api, "jobset")


def test_an_argo_step_whose_upstream_status_its_owner_wrote_is_withdrawn_once(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    workflow = argo_workflow("written", pool=POOL, namespace="ml", gpus="8")
    prep = workflow["status"]["nodes"]["written.prep"]
    del prep["finishedAt"]  # "Succeeded", says its owner, with no time: due "now" each reading
    workflow["metadata"]["labels"]["workflows.argoproj.io/completed"] = "true"  # Argo ignores it
    api.put("workflows", workflow)
    workflow_gpus = 8
    tick = daemon(tmp_path)
    first = tick(api, T0)
    assert first.plan.pool(POOL).target_gpus >= workflow_gpus
    ended = []
    for now in range(T0 + 60, T0 + 3600 + 1, 60):
        record = tick(api, now)
        ended += [o for o in record.notice_ended if o.source == "argo"]
    (gone,) = ended
    assert not gone.came and gone.held_gpu_hours == workflow_gpus * GRACE / 3600
    assert record.plan.pool(POOL).target_gpus == 0


def test_a_namespace_whose_runs_never_come_is_cut_within_25_h_and_only_it(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    """Two namespaces, one source: ``no-quota``'s ``* * * * *`` CronJob never makes a pod,
    ``ml``'s hourly one does every hour. Within 25 h ``no-quota`` is cut - its items no longer
    planned - while ``ml``'s items of the same source stay trusted and planned."""
    greedy = cronjob("every-minute", pool=POOL, schedule="* * * * *")
    greedy["metadata"]["namespace"] = "no-quota"
    api.put("cronjobs", greedy)
    api.put("cronjobs", cronjob("hourly", pool=POOL, schedule="0 * * * *"))
    sim = ClusterSim(api)
    tick = daemon(tmp_path, day_budget=1200)  # ml's hourly notice (~64 GPU-h a day) in its share
    cut_at = None
    for now in range(T0, T0 + 25 * 3600 + 1, 300):
        ran = datetime.fromtimestamp(now - now % 60, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        obj = api.objects("cronjobs", "no-quota")[0]
        obj["status"] = {"lastScheduleTime": ran}
        api.store.replace(("cronjobs", "no-quota", "every-minute"), obj)
        for pod in api.objects("pods", "ml"):  # the last hour's run has finished
            if pod["metadata"]["name"].startswith("hourly-"):
                api.store.objects.pop(("pods", "ml", pod["metadata"]["name"]))
        if now % 3600 == 0:  # ml's run: its Job's pod exists, and the CronJob says so
            hourly_run(api, sim, now)
        record = tick(api, now)
        status = status_of(record, "cronjob")
        if cut_at is None and "no-quota" in status.distrusted_namespaces:
            cut_at = now
    assert cut_at is not None and cut_at - T0 <= 25 * 3600, cut_at
    assert status.distrusted_namespaces == ("no-quota",) and status.trusted
    before_the_hour = tick(api, now + 3000)  # ml's next run is due within the prewarm window
    planned = " ".join(before_the_hour.plan.pool(POOL).reasons)
    assert "announced: 16 GPUs due within" in planned and "(cronjob ml/hourly@" in planned
    assert "cronjob/no-quota not trusted" in planned and "its 16 GPUs due not planned" in planned


def hourly_run(api: KubeApiDouble, sim: ClusterSim, now: int) -> None:
    """``ml``'s hourly CronJob ran at ``now``: its Job's pod exists (pending)."""
    obj = api.objects("cronjobs", "ml")[0]
    obj["status"] = {"lastScheduleTime": datetime.fromtimestamp(now, UTC).isoformat()[:19] + "Z"}
    api.store.replace(("cronjobs", "ml", "hourly"), obj)
    pod = sim.submit(f"hourly-{now // 60}-x", POOL, 8)
    pod["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": f"hourly-{now // 60}",
            "uid": f"uid-{now}",
            "controller": True,
        }
    ]
    api.store.replace(("pods", "ml", pod["metadata"]["name"]), pod)
