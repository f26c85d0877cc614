"""Announced work is counted once: left out of the history the forecast learns, planned from
its notice.

A pool runs 16 GPUs all day and a nightly CronJob adds a 16-GPU run for an hour; three days of
it are backfilled into a real Prometheus as kube-state-metrics exports them by default, with
the owner chain (``kube_pod_owner`` -> ``kube_job_owner{owner_kind="CronJob"}``). The default
query reads the runs out of the history; the daemon, a seasonal model trained on that history
and the CronJob on the API double due in five minutes, prewarms the run once (16 GPUs, from
its notice) - and, were the runs' Jobs not a CronJob's, the same model would forecast the run
from the history (no notice then: nothing else raises the plan).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from forecaster.actuators.kube import Kube, api_client
from forecaster.app import build, doctor, training
from forecaster.service.clock import FakeClock
from forecaster.service.daemon import Daemon
from forecaster.sources.prometheus import PrometheusSource
from forecaster.testing.fakes import settings
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble
from forecaster.testing.objects import cronjob
from forecaster.testing.prometheus_server import Series, running_prometheus

pytestmark = pytest.mark.prometheus
POOL = "gpu-a"
NOW = int(time.time()) // 3600 * 3600 - 6 * 3600  # older than the head block
START = NOW - 3 * 86400
RUN = NOW + 300  # the nightly run's time of day
DAYS = 3


def pod_series(pod: str, gpus: float, steps: range, *, job: str | None) -> list[Series]:
    """One pod of ``POOL`` in ``ml`` as kube-state-metrics exports it (the node selector is
    the opt-in bootstrap metric), and its owner Job when it has one."""
    ident = {"namespace": "ml", "pod": pod}
    out = [
        Series(
            "kube_pod_container_resource_requests",
            {**ident, "container": "c", "resource": "nvidia_com_gpu", "unit": "integer"},
            [(t, gpus) for t in steps],
        ),
        Series("kube_pod_status_phase", {**ident, "phase": "Running"}, [(t, 1.0) for t in steps]),
        Series(
            "kube_pod_nodeselectors",
            {**ident, "nodeselector_karpenter_sh_nodepool": POOL},
            [(t, 1.0) for t in steps],
        ),
    ]
    if job:
        owner = {"owner_kind": "Job", "owner_name": job, "owner_is_controller": "true"}
        out.append(Series("kube_pod_owner", {**ident, **owner}, [(t, 1.0) for t in steps]))
    return out


def history(owner_kind: str) -> list[Series]:
    """The steady 16 GPUs and three nightly runs, their Jobs owned by ``owner_kind``."""
    out = pod_series("steady", 16.0, range(START, NOW + 1, 60), job=None)
    for day in range(1, DAYS + 1):
        begin = RUN - day * 86400
        job = f"nightly-{begin // 60}"
        out += pod_series(f"{job}-x", 16.0, range(begin, begin + 3600, 60), job=job)
        kind = {"owner_kind": owner_kind, "owner_name": "nightly", "owner_is_controller": "true"}
        out.append(
            Series(
                "kube_job_owner",
                {"namespace": "ml", "job_name": job, **kind},
                [(t, 1.0) for t in range(begin, begin + 3600, 60)],
            )
        )
    return out


@pytest.fixture
def api() -> Iterator[KubeApiDouble]:
    with KubeApiDouble() as server:
        server.clock = float(NOW)
        ClusterSim(server).busy_pool(POOL, limit_gpus=400)  # 16 GPUs running
        yield server
    assert server.invalid == [], server.invalid


def plan_at_the_run(tmp_path: Path, api: KubeApiDouble, url: str) -> tuple[int, float, list[str]]:
    """The daemon's first plan at ``NOW``: (target GPUs, forecast upper, reasons)."""
    config = settings(
        tmp_path,
        source={"kind": "prometheus", "prometheus": {"url": url, "retries": 0}},
        forecast={"models": ["seasonal-naive"], "min_history_days": 1, "history_days": DAYS},
        planning={"actuation": "placeholders", "budgets": {"max_total_prewarm_gpus": 64}},
        pools=[{"name": POOL, "gpus_per_node": 8, "max_prewarm_gpus": 64}],
    )
    clock = FakeClock(datetime.fromtimestamp(NOW, UTC))
    (trained,) = training.train(config, pools=None, clock=clock)  # the weekly job, on Prometheus
    assert trained.status == "trained", trained.message
    source = PrometheusSource(url=url, queries={}, outage_min_seconds=0)
    kube = Kube(api_client(host=api.url), dry_run=True)
    daemon = Daemon(reconciler=build.build_reconciler(config, source=source, kube=kube))
    record = daemon.reconcile(NOW)
    assert record is not None
    pool = record.pools[POOL]
    assert pool.demand is not None, record.plan.pool(POOL).reasons
    plan = record.plan.pool(POOL)
    return plan.target_gpus, pool.demand.upper_gpus, plan.reasons


def test_a_cronjobs_runs_are_read_out_of_the_history_and_prewarmed_once_from_notice(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    when = datetime.fromtimestamp(RUN, UTC)
    api.put(
        "cronjobs",
        cronjob(
            pool=POOL,
            schedule=f"{when.minute} {when.hour} * * *",
            status={"lastScheduleTime": datetime.fromtimestamp(RUN - 86400, UTC).isoformat()},
        ),
    )
    with running_prometheus(tmp_path / "p", history("CronJob")) as url:
        source = PrometheusSource(url=url, queries={}, outage_min_seconds=0)
        series, _ = source.fetch(POOL, start=START, end=NOW, step_seconds=60)
        assert np.all(series.values == 16.0)  # the runs are announced work: not in it
        target, upper, reasons = plan_at_the_run(tmp_path / "a", api, url)
    assert "(seasonal-naive" in reasons[-1] or any("seasonal-naive" in r for r in reasons)
    assert upper == pytest.approx(16.0, abs=0.5), reasons  # the forecast did not learn the run
    assert target == 16, reasons  # the run's 16 GPUs, from its notice, once
    assert any(r.startswith("announced: 16 GPUs due within") for r in reasons), reasons


def test_runs_of_jobs_no_cronjob_owns_stay_in_the_history_and_the_forecast(
    tmp_path: Path, api: KubeApiDouble
) -> None:
    """The contrast: the same pods, their Jobs of no CronJob - demand to learn, no notice."""
    with running_prometheus(tmp_path / "p", history("<none>")) as url:
        source = PrometheusSource(url=url, queries={}, outage_min_seconds=0)
        series, _ = source.fetch(POOL, start=START, end=NOW, step_seconds=60)
        assert series.values.max() == 32.0
        target, upper, reasons = plan_at_the_run(tmp_path / "b", api, url)
    assert upper >= 31.5, reasons  # the seasonal model sees yesterday's run
    assert target == 16, reasons
    assert not any(r.startswith("announced:") for r in reasons), reasons


@pytest.mark.parametrize(("owner_kind", "announced"), [("CronJob", 3 * 16.0), ("<none>", 0.0)])
def test_doctor_measures_the_share_of_gpu_hours_the_cluster_announced(
    tmp_path: Path, owner_kind: str, announced: float
) -> None:
    """Three days of 16 GPUs and three 16-GPU hour-long runs: 48 of 1200 GPU-hours are a
    CronJob's (5-minute steps: a run's edges make it a step longer or shorter); none when no
    CronJob owns the runs' Jobs."""
    with running_prometheus(tmp_path / "p", history(owner_kind)) as url:
        source = PrometheusSource(url=url, queries={}, outage_min_seconds=0)
        share = source.announced_share(start=START, end=NOW)
        line = doctor.announced_history_line(source, now=NOW)
    assert share.gpu_hours == pytest.approx(3 * 24 * 16 + 48, rel=0.02)
    assert share.announced_gpu_hours == pytest.approx(announced, abs=3 * 16 * 300 / 3600)
    assert line.startswith(f"notice last 7 days: {share.announced_gpu_hours:.0f} of")
