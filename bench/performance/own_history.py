""" "Would forecaster help my pool?" timed end to end on 28 days of a pool's own history.

Writes what kube-state-metrics would have exported for the pods of ITP cluster04's days 2-30
(``tests.support.ksm_history``: each job as node-sized pods of one Job, one scrape every
``--scrape-seconds``), backfills it into a real Prometheus with ``promtool``, then runs the
command a user runs - ``forecaster replay --config F --pool itp --days 28 --frontier`` with the
shipped config pointed at that Prometheus - and prints its output (history found, split,
lead, the frontier and the verdict with the configuration lines), its wall time and the load
of the machine before and after. The acceptance: <= 10 min on 2 workers (stretch: 5).

Run: ``.venv/bin/python -m bench.performance.own_history [--workers 2] [--days 28]``
(needs ``prometheus`` and ``promtool``: ``scripts/setup`` installs them).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import yaml

from forecaster.cli import main as forecaster
from forecaster.core.series import iso_utc
from forecaster.durations import DAY
from forecaster.sources.files import read_job_trace
from tests.support.ksm_history import job_series
from tests.support.prometheus_server import running_prometheus

ROOT = Path(__file__).resolve().parents[2]
EPOCH = 1_767_225_600  # 2026-01-01T00:00Z: trace second 0
FIRST_DAY = 2


def main() -> None:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    own.add_argument("--trace", choices=("cluster04", "cluster07"), default="cluster04")
    own.add_argument("--days", type=int, default=28)
    own.add_argument("--scrape-seconds", type=int, default=60)
    own.add_argument("--workers", type=int, default=2)
    own.add_argument("--json", type=Path, default=ROOT / "out" / "own-history.json")
    mine = own.parse_args()
    jobs = read_job_trace(ROOT / f"data/samples/msr-itp-{mine.trace}-jobs.csv", epoch=EPOCH)
    start = EPOCH + FIRST_DAY * DAY
    end = start + mine.days * DAY
    began = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        series = list(job_series(jobs, start=start, end=end, every=mine.scrape_seconds, pool="itp"))
        with running_prometheus(Path(work), series) as url:
            print(
                f"{mine.trace} days {FIRST_DAY}-{FIRST_DAY + mine.days} as kube-state-metrics"
                f" every {mine.scrape_seconds} s: backfilled and started in"
                f" {time.perf_counter() - began:.0f} s"
            )
            config = Path(work) / "forecaster.yaml"
            document = yaml.safe_load((ROOT / "config" / "forecaster.yaml").read_text())
            document["source"] = {"kind": "prometheus", "prometheus": {"url": url}}
            document["twin"]["jobs"] = str(ROOT / "data/samples/msr-itp-cluster04-jobs.csv")
            config.write_text(yaml.safe_dump(document))
            mine.json.parent.mkdir(parents=True, exist_ok=True)
            load = os.getloadavg()[0]
            began = time.perf_counter()
            code = forecaster(
                [
                    "replay", "--config", str(config), "--pool", "itp",
                    "--days", str(mine.days), "--end", iso_utc(end), "--frontier",
                    "--workers", str(mine.workers), "--json", str(mine.json),
                ]
            )  # fmt: skip
            took = time.perf_counter() - began
    print(
        f"replay --config F --pool itp --days {mine.days} --frontier: exit {code} in"
        f" {took / 60:.1f} min on {mine.workers} workers (load {load:.2f} before,"
        f" {os.getloadavg()[0]:.2f} after; acceptance <= 10 min, stretch 5)"
    )


if __name__ == "__main__":
    main()
