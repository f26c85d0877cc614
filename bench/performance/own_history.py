""" "Would forecaster help my pool?" timed end to end on a pool's own history: the README's command.

Writes what kube-state-metrics would have exported for the pods of ITP cluster04 from day 2 on
(``forecaster.testing.ksm_history``: each job as node-sized pods of one Job, one scrape every
``--scrape-seconds``), backfills it into a real Prometheus with ``promtool``, then runs each
``forecaster replay`` line of the README (``forecaster.testing.documents.readme_replays``) as a user
would - their config and pool being the shipped config pointed at that Prometheus and its pool
``itp``, their output files in a scratch folder - and prints its output (history found, split,
lead, the frontier and the verdict with the configuration lines), its wall time and the load
of the machine before and after. The acceptance: <= 5 min on 2 workers each. ``--days N`` also
times ``replay --config F --pool itp --days N --frontier`` after them, on the same backfill
(28: <= 10 min, stretch 5; the README's lines then end where it does: its last 14 days).

Run: ``.venv/bin/python -m bench.performance.own_history [--workers 2] [--days 28]``
(needs ``prometheus`` and ``promtool``: ``scripts/setup`` installs them).
"""

from __future__ import annotations

import argparse
import os
import shlex
import tempfile
import time
from pathlib import Path

import yaml

from forecaster.cli import build_parser
from forecaster.cli import main as forecaster
from forecaster.core.series import iso_utc
from forecaster.durations import DAY
from forecaster.sources.files import read_job_trace
from forecaster.testing.documents import readme_replays
from forecaster.testing.ksm_history import job_series
from forecaster.testing.prometheus_server import running_prometheus

ROOT = Path(__file__).resolve().parents[2]
EPOCH = 1_767_225_600  # 2026-01-01T00:00Z: trace second 0
FIRST_DAY = 2
OUTPUTS = {"--json", "--report"}


def as_run_here(line: str, *, config: Path, work: Path) -> list[str]:
    """A README replay line with the user's config, pool and output files made this bench's."""
    words = shlex.split(line)[1:]
    for at, word in enumerate(words[:-1]):
        if word == "--config":
            words[at + 1] = str(config)
        elif word == "--pool":
            words[at + 1] = "itp"
        elif word in OUTPUTS:
            words[at + 1] = str(work / Path(words[at + 1]).name)
    return words


def main() -> None:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    own.add_argument("--trace", choices=("cluster04", "cluster07"), default="cluster04")
    own.add_argument("--days", type=int, default=None, help="also this many days, after them")
    own.add_argument("--scrape-seconds", type=int, default=60)
    own.add_argument("--workers", type=int, default=2)
    mine = own.parse_args()
    jobs = read_job_trace(ROOT / f"data/samples/msr-itp-{mine.trace}-jobs.csv", epoch=EPOCH)
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        config = work / "forecaster.yaml"
        lines = [(line, 5) for line in readme_replays()]
        if mine.days is not None:
            lines.append(
                (f"forecaster replay --config F --pool P --days {mine.days} --frontier", 10)
            )
        runs = [(as_run_here(line, config=config, work=work), limit) for line, limit in lines]
        days = max(build_parser().parse_args(run).days for run, _ in runs)
        start = EPOCH + FIRST_DAY * DAY
        end = start + days * DAY
        began = time.perf_counter()
        series = list(job_series(jobs, start=start, end=end, every=mine.scrape_seconds, pool="itp"))
        with running_prometheus(work, series) as url:
            print(
                f"{mine.trace} days {FIRST_DAY}-{FIRST_DAY + days} as kube-state-metrics"
                f" every {mine.scrape_seconds} s: backfilled and started in"
                f" {time.perf_counter() - began:.0f} s"
            )
            document = yaml.safe_load((ROOT / "config" / "forecaster.yaml").read_text())
            document["source"] = {"kind": "prometheus", "prometheus": {"url": url}}
            document["twin"]["jobs"] = str(ROOT / "data/samples/msr-itp-cluster04-jobs.csv")
            config.write_text(yaml.safe_dump(document))
            for run, limit in runs:
                timed(run, end=end, workers=mine.workers, limit_minutes=limit)


def timed(run: list[str], *, end: int, workers: int, limit_minutes: int) -> None:
    """Run one replay line to the backfilled history's end and print its time beside the limit."""
    load = os.getloadavg()[0]
    began = time.perf_counter()
    code = forecaster([*run, "--end", iso_utc(end), "--workers", str(workers)])
    took = time.perf_counter() - began
    print(
        f"{shlex.join(['forecaster', *run])}: exit {code} in {took / 60:.1f} min on {workers}"
        f" workers (load {load:.2f} before, {os.getloadavg()[0]:.2f} after; acceptance"
        f" <= {limit_minutes} min)"
    )


if __name__ == "__main__":
    main()
