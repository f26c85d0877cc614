"""Daemon benchmark: reconcile tick time for 10 pools and memory after a simulated week.

Ten NodePools in the API server double (real kubernetes client over HTTP, a scheduler and
Karpenter playing along), demand from the shipped traces (each pool a different slice), one
trained model per pool published to a scratch store. The daemon ticks every 15 simulated
minutes for 7 simulated days; prints tick time percentiles and the RSS and thread count at the
start and the end (flat means no leak).

Run:
``.venv/bin/python -m bench.performance.daemon [--pools 10] [--days 7] [--every 900]``
for memory over a week; ``--days 0.3 --every 30`` for tick times at the production cadence
(30 s ticks, so placeholder renewals are spread over the renewal window as in a cluster).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from bench.measure import rss_mib
from forecaster.actuators.kube import Kube, api_client
from forecaster.app.build import build_cluster_service
from forecaster.core.quality import QualityReport, regularize
from forecaster.core.series import DemandSeries
from forecaster.durations import DAY
from forecaster.forecasting.artifacts import ArtifactStore
from forecaster.forecasting.registry import build
from forecaster.service.clock import FakeClock
from forecaster.settings import Settings
from forecaster.sources.files import CsvSource
from forecaster.testing.kubeapi.cluster import ClusterSim
from forecaster.testing.kubeapi.server import KubeApiDouble

ROOT = Path(__file__).resolve().parents[2]


class ShiftedSource:
    """Each pool replays a sample series shifted so that 'now' lands inside it."""

    def __init__(self, series: dict[str, tuple[DemandSeries, int]]) -> None:
        self.series = series

    def fetch(
        self, pool: str, *, start: int, end: int, step_seconds: int
    ) -> tuple[DemandSeries, QualityReport]:
        base, shift = self.series[pool]
        part = base.window(start - shift, end - shift + 1)
        return regularize(
            part.timestamps + shift, part.values, step_seconds=step_seconds, name=pool
        )


def publish_models(series: dict[str, tuple[DemandSeries, int]], *, now: int) -> Path:
    """One quantreg model per pool, trained on the 14 days before ``now``, in a scratch store."""
    models = Path(tempfile.mkdtemp())
    store = ArtifactStore(models)
    for name, (base, shift) in series.items():
        train = base.window(now - shift - 14 * DAY, now - shift)
        model = build("quantreg-raw", horizons_seconds=(300, 900, 1800), quantiles=(0.5, 0.95)).fit(
            train
        )
        store.publish(
            pool=name,
            model_name="quantreg-raw",
            model=model,
            metadata={},
            created="20260101T000000Z",
        )
    return models


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=10)
    parser.add_argument("--days", type=float, default=7)
    parser.add_argument("--every", type=int, default=900)
    args = parser.parse_args()
    names = [f"gpu-{i}" for i in range(args.pools)]
    path = ROOT / "data/samples/msr-itp-cluster04.csv"
    samples = {"msr-itp-cluster04": CsvSource({"s": path}).fetch_all("s", step_seconds=60)[0]}
    itp = samples["msr-itp-cluster04"]
    now = 1_800_000_000 - 1_800_000_000 % 3600
    series = {name: (itp, now - (itp.start + (15 + i) * DAY)) for i, name in enumerate(names)}
    models = publish_models(series, now=now)
    settings = Settings.model_validate(
        {
            "source": {"kind": "prometheus"},
            "models_dir": str(models),
            "planning": {
                "budgets": {
                    "max_total_prewarm_gpus": 2000,
                    "max_prewarm_gpu_hours_per_day": 1e6,
                    "max_cost_per_hour": 1e6,
                }
            },
            "pools": [{"name": n, "max_prewarm_gpus": 64} for n in names],
        }
    )
    with KubeApiDouble() as api:
        api.clock = float(now)
        sim = ClusterSim(api)
        for name in names:
            sim.add_nodepool(name, limit_gpus=4000, consolidate_after="Never")
            for j in range(6):
                sim.add_node(name)
                sim.submit(f"{name}-job-{j}", name, 8)
        sim.step()
        clock = FakeClock(datetime.fromtimestamp(now, tz=UTC))
        kube = Kube(api_client(host=api.url), dry_run=False)
        service = build_cluster_service(settings, kube, identity="bench", clock=clock)
        service.daemon.reconciler.source = ShiftedSource(series)
        service.renew()
        service.reconcile()
        start_rss, start_threads = rss_mib(), threading.active_count()
        durations, writes = [], []
        ticks = int(args.days * DAY / args.every)
        for k in range(1, ticks + 1):
            t = now + k * args.every
            clock.set(datetime.fromtimestamp(t, tz=UTC))
            api.clock = float(t)
            service.renew()
            began = time.perf_counter()
            service.reconcile()
            durations.append(time.perf_counter() - began)
            writes.append(len(api.writes()))
            sim.step()
            api.requests.clear()  # the double's request log is test tooling, not the daemon
        service.stop()
    d = np.array(durations)
    print(
        f"{args.pools} pools, {ticks} ticks every {args.every} s over {args.days:g} simulated days"
    )
    print(
        f"tick seconds: p50 {np.percentile(d, 50):.3f}, p95 {np.percentile(d, 95):.3f},"
        f" max {d.max():.3f}"
    )
    print(
        f"RSS MiB: after first tick {start_rss:.0f}, after the week {rss_mib():.0f};"
        f" peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}"
    )
    slowest = int(np.argmax(d))
    print(
        f"slowest tick: {d[slowest]:.3f} s with {writes[slowest]} API writes"
        f" (median tick: {int(np.median(writes))} writes)"
    )
    print(f"threads: {start_threads} -> {threading.active_count()}")
    errors = service.daemon.last.errors if service.daemon.last else {}
    print(f"errors in the last tick: {errors or 'none'}")


if __name__ == "__main__":
    with threadpool_limits(limits=1):
        main()
