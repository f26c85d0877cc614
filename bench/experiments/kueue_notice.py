"""What notice of queued work buys: predictive with Kueue workloads visible before their pods.

Issue 10's moonshot says the information the traces lack is work known before it becomes pods
(queued jobs, Kueue workloads holding quota but not yet admitted). The ITP traces carry no queue:
each job's pods are created at its submission. Here every job's Kueue workload holds quota
NOTICE seconds before its pods exist (``TwinConfig.kueue_notice_seconds``: an admission check
such as ProvisioningRequest, or a queue upstream that hands work over ahead), and the daemon's
own path reads it as a cluster shows it: workloads ``QuotaReserved`` and not ``Admitted`` count as
demand (``core.planner``). Nothing else changes; waits count from the pods' creation, so each row
compares job for job with the frontier's.

Per trace it replays the frontier's chosen points (``--frontier-json``: its ``chosen`` +5 % and
+10 % points, picked on the tuning days without notice) with each notice, from day 0 to the end
of the evaluation window, and prints both windows against static headroom at the same GPU-hours
(the frontier's static curve for that window: static reads no workloads, so notice does not
move it) and the P95 wait against reactive's (the moonshot: 80 % below at <= +10 % GPU-hours).
Notice 0 must reproduce the frontier's own rows; the bench says whether it does.

Run: ``.venv/bin/python -m bench.experiments.kueue_notice --trace cluster04 --frontier-json
out/frontier-c04.json [--notices 0,60,180,360,600] [--workers 2]``
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import logging
import resource
import time
from pathlib import Path
from typing import Any

from bench.performance.replay import trace_windows
from forecaster.app.replay_policies import replay_policy
from forecaster.durations import DAY
from forecaster.simulation.frontier import (
    BUDGETS_PERCENT,
    KEYS,
    Run,
    from_document,
    measured,
    ratios,
)
from forecaster.simulation.metrics import ReplayMetrics
from forecaster.simulation.replay import ReplaySetup
from forecaster.simulation.workers import run_each, usable_cpus

WINDOWS = ("tune", "eval")


def main() -> None:
    own = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    own.add_argument("--trace", choices=("cluster04", "cluster07"), default="cluster04")
    own.add_argument("--frontier-json", type=Path, required=True)
    own.add_argument("--notices", default="0,60,180,360,600", help="seconds, comma-separated")
    own.add_argument("--tune-days", default="10-30")
    own.add_argument("--eval-days", default="30-50")
    own.add_argument("--workers", type=int, default=usable_cpus())
    mine = own.parse_args()
    logging.basicConfig(level=logging.WARNING)
    frontier = json.loads(mine.frontier_json.read_text())
    notices = [int(n) for n in mine.notices.split(",")]
    chosen = {
        b: frontier["chosen"][str(b)] for b in BUDGETS_PERCENT if str(b) in frontier["chosen"]
    }
    jobs, epoch, setup, tune, evaluate = trace_windows(
        mine.trace, tune_days=mine.tune_days, eval_days=mine.eval_days
    )
    tasks = [
        (
            budget,
            notice,
            Run(
                "predictive",
                "predictive",
                point["knob"],
                _noticed(setup, notice).at_point(point["knob"], point.get("floor_gpus", 0)),
                point.get("floor_gpus", 0),
            ),
        )
        for budget, point in chosen.items()
        for notice in notices
    ]
    windows = {
        "tune": (epoch + tune[0] * DAY, epoch + tune[1] * DAY),
        "eval": (epoch + evaluate[0] * DAY, epoch + evaluate[1] * DAY),
    }
    began = time.perf_counter()
    results = run_each(
        functools.partial(measured, jobs=jobs, make_policy=replay_policy, windows=windows),
        [run for _, _, run in tasks],
        workers=mine.workers,
    )
    print(
        f"{mine.trace}: {len(tasks)} replays on {mine.workers} workers in"
        f" {time.perf_counter() - began:.0f} s; the frontier's chosen points with Kueue notice"
    )
    print(
        "(GPU-hours vs reactive; P95 / mean wait; > 5 min; vs static at the same GPU-hours;"
        " P95 vs reactive's)"
    )
    for window in WINDOWS:
        document = frontier if window == "eval" else frontier["tune"]
        static = [from_document(m) for m in document["static"]]
        reactive = document["reactive"]
        print(f"-- {window} window, days {mine.tune_days if window == 'tune' else mine.eval_days}")
        for (budget, notice, run), point in zip(tasks, results, strict=True):
            m = getattr(point, window)
            print(
                f"+{budget} % {run.label.removeprefix('predictive '):>9}"
                f" notice {notice:4d} s:"
                f" {m.gpu_hours / reactive['gpu_hours'] - 1:+6.2%} GPU-h,"
                f" P95 {m.p95_wait_s:4.0f} s, mean {m.mean_wait_s:6.1f} s,"
                f" > 5 min {m.share_waiting_over_5min:6.1%}; vs static: "
                + ratios(m, static)
                + f"; P95 {m.p95_wait_s / reactive['p95_wait_s'] - 1:+.0%} vs reactive"
                + (f"; {m.handoffs} hand-offs over the run" if window == "eval" else "")
            )
            if window == "eval" and notice == 0:
                print(f"    notice 0 reproduces the frontier's row: {_same(m, chosen[budget])}")
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB (parent)")


def _same(measured: ReplayMetrics, row: dict[str, Any]) -> str:
    differ = [k for k in KEYS if abs(float(getattr(measured, k)) - float(row[k])) > 1e-9]
    return "yes" if not differ else "NO (" + ", ".join(differ) + ")"


def _noticed(setup: ReplaySetup, notice: int) -> ReplaySetup:
    """``setup`` with every job's Kueue workload visible ``notice`` seconds before its pods."""
    return dataclasses.replace(
        setup, twin=dataclasses.replace(setup.twin, kueue_notice_seconds=notice)
    )


if __name__ == "__main__":
    main()
