"""How fast the training job reads a pool's pod history from a real Prometheus, and how true it is.

The operating point replays the pool's own pods (``sources.prometheus.POD_QUERIES``: per pod its
GPU requests, creation and start times and the last minute it was Pending or Running, one day
at a time). This bench writes kube-state-metrics series for the pods of an ITP trace's days
2-30 (each job as node-sized pods of one Job, as the cluster would run them; one scrape every
``--scrape-seconds``: ``forecaster.testing.ksm_history``), backfills them into a real Prometheus
with ``promtool``, reads them back with ``PrometheusSource.fetch_pods`` and prints the time
taken, the jobs found and how their GPU-hours compare with the trace's.

Run: ``.venv/bin/python -m bench.performance.pod_history --trace cluster04 [--scrape-seconds 300]``
(needs ``prometheus`` and ``promtool``: ``scripts/setup`` installs them).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.experiments.operating_point import ROOT
from forecaster.durations import DAY
from forecaster.sources.files import read_job_trace
from forecaster.sources.prometheus import PrometheusSource
from forecaster.testing.ksm_history import job_series
from forecaster.testing.prometheus_server import running_prometheus

EPOCH = 1_767_225_600  # 2026-01-01T00:00Z: trace second 0
POOL = "itp"


def main() -> None:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    own.add_argument("--trace", choices=("cluster04", "cluster07"), default="cluster04")
    own.add_argument("--first-day", type=float, default=2.0)
    own.add_argument("--last-day", type=float, default=30.0)
    own.add_argument("--scrape-seconds", type=int, default=300)
    mine = own.parse_args()
    jobs = read_job_trace(ROOT / f"data/samples/msr-itp-{mine.trace}-jobs.csv", epoch=EPOCH)
    start, end = int(EPOCH + mine.first_day * DAY), int(EPOCH + mine.last_day * DAY)
    pods = jobs.seen_between(start, end)
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        series = list(job_series(jobs, start=start, end=end, every=mine.scrape_seconds, pool=POOL))
        with running_prometheus(Path(work), series) as url:
            backfill = time.perf_counter() - began
            source = PrometheusSource(url=url, queries={}, timeout_seconds=120)
            began = time.perf_counter()
            found = source.fetch_pods(POOL, start=start, end=end, step_seconds=60)
            took = time.perf_counter() - began
    seen = found.seen_between(start, end)
    real_hours = float(np.sum(pods.duration * pods.gpus)) / 3600
    read_hours = float(np.sum(seen.duration * seen.gpus)) / 3600
    print(
        f"{mine.trace} days {mine.first_day:g}-{mine.last_day:g}: {len(pods):,} jobs"
        f" ({pods.gpus.sum():,} GPUs requested in all), kube-state-metrics every"
        f" {mine.scrape_seconds} s, backfilled and started in {backfill:.0f} s"
    )
    print(
        f"fetch_pods: {len(found):,} jobs (pods of one Job a gang) in {took:.1f} s"
        f" ({(end - start) / DAY:.0f} windows of a day, 5 queries each);"
        f" GPU-hours {read_hours:,.0f} read vs {real_hours:,.0f} in the trace"
        f" ({read_hours / real_hours - 1:+.2%}: a pod is seen alive until the scrape after"
        " it ends)"
    )


if __name__ == "__main__":
    main()
